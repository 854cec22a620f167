/**
 * A warm pool's pods on the apiserver (docs/architecture.md, "Warm pools"): made like a
 * sandbox's pod but named `warm-<template>-<random>` and labelled with their pool instead of a
 * sandbox id, listed by that label, and claimed by one update that swaps the pool label for the
 * sandbox's id under the pod's resourceVersion, so the apiserver hands each pod to exactly one
 * claimer (Kubernetes API concepts, "Resource versions": an update whose resourceVersion is not
 * the current one answers 409 Conflict). Which pods are the pool's own is the store's record
 * (`warm_pods`, by uid and fingerprint), never the label alone.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import type { SandboxPodSettings, SandboxResources } from '../../contract/index.js';
import { httpStatusOf, type KubernetesClient } from './client.js';
import {
  MANAGED_BY,
  POD_ANNOTATIONS,
  POD_LABELS,
  sandboxPod,
  tenantAnnotations,
  tenantLabels,
} from './pod-spec.js';
import type { PodRef } from './pods.js';
import { FAILED_SANDBOX_EVENT } from './sandbox-events.js';

/** What a warm pod is made from. */
export interface WarmPodInput {
  template: string;
  image: string;
  resources: SandboxResources;
  settings?: SandboxPodSettings;
}

/**
 * The manifest of a new warm pod: {@link sandboxPod}'s spec (same image, resources, security
 * and isolation settings), named `warm-<template>-<10 random base32 characters>`, labelled
 * `managed-by` and {@link POD_LABELS.warmPool} (no sandbox id: the orphan sweeper and the
 * readiness informers leave it alone until it is claimed).
 */
export function warmPodManifest(input: WarmPodInput): V1Pod {
  const pod = sandboxPod({ ...input, sandboxId: 'warm', generation: 0 });
  const suffix = randomBytes(8).toString('hex').slice(0, 10);
  pod.metadata = {
    // At most 79 characters (a pod name may have 253): never cut, so the suffix stays.
    name: `warm-${input.template}-${suffix}`,
    labels: { [POD_LABELS.managedBy]: MANAGED_BY, [POD_LABELS.warmPool]: input.template },
    annotations: {
      [POD_ANNOTATIONS.template]: input.template,
      [POD_ANNOTATIONS.diskMib]: String(input.resources.diskMib),
    },
  };
  return pod;
}

/** A pool's pod as a reconcile or a claim reads it. */
export interface WarmPod extends PodRef {
  /** From its disk annotation, in MiB (NaN when missing). */
  diskMib: number;
  /** `status.podIP`: set once the node has started its sandbox. */
  podIp?: string;
  phase?: string;
  nodeName?: string;
  createdAtMs?: number;
  terminating: boolean;
  /** The object as listed: what a claim sends back, with its resourceVersion. */
  object: V1Pod;
}

/** Whether a warm pod can be claimed now: running, with an IP, not being deleted. */
export function isReady(pod: WarmPod): boolean {
  return isReadyObject(pod.object);
}

/** {@link isReady} of the pod as listed (a {@link WarmPod}'s fields are read from it). */
function isReadyObject(object: V1Pod): boolean {
  return (
    !object.metadata?.deletionTimestamp &&
    object.status?.phase === 'Running' &&
    Boolean(object.status?.podIP)
  );
}

/** The selector of every unclaimed pool pod (any template). */
export const WARM_POOL_SELECTOR = `${POD_LABELS.managedBy}=${MANAGED_BY},${POD_LABELS.warmPool}`;

/**
 * The unclaimed pods of a template's pool (one LIST by label).
 * @throws the client's ApiException for apiserver errors
 */
export async function listWarmPods(client: KubernetesClient, template: string): Promise<WarmPod[]> {
  return warmPodsOf(await listWarmPodObjects(client, template), template);
}

/**
 * {@link listWarmPods} as the apiserver answered: the pod objects, none read into a
 * {@link WarmPod} yet.
 * @throws the client's ApiException for apiserver errors
 */
export async function listWarmPodObjects(
  client: KubernetesClient,
  template: string,
): Promise<V1Pod[]> {
  const list = await client.core.listNamespacedPod({
    namespace: client.namespace,
    labelSelector: `${POD_LABELS.managedBy}=${MANAGED_BY},${POD_LABELS.warmPool}=${template}`,
  });
  return list.items;
}

/** The pods of `objects` that are `template`'s unclaimed pool pods, as {@link WarmPod}s. */
export function warmPodsOf(objects: readonly V1Pod[], template: string): WarmPod[] {
  return objects.flatMap((object) => (isPoolPod(object, template) ? [warmPodOf(object)] : []));
}

/**
 * The ready ({@link isReady}) pods of `template`'s pool among `objects`, in a uniformly random
 * order, drawn lazily: each draw is one step of a Fisher-Yates shuffle (Knuth, TAOCP vol. 2,
 * Algorithm P) over the ready ones, and only a drawn pod is read into a {@link WarmPod}. A claim
 * that takes k of n ready pods so costs one cheap test per object and k WarmPods, not n WarmPods
 * and a whole shuffle; two claimers at once still start, most likely, from different pods.
 * @param random uniform in [0, 1) (default `Math.random`)
 * @returns how many pods are ready, and their draws (each pod at most once)
 */
export function readyWarmPodsInRandomOrder(
  objects: readonly V1Pod[],
  template: string,
  random: () => number = Math.random,
): { ready: number; draws: Generator<WarmPod, void, undefined> } {
  const ready = objects.filter((object) => isPoolPod(object, template) && isReadyObject(object));
  function* draws(): Generator<WarmPod, void, undefined> {
    // ready[0, left) holds the pods not drawn yet.
    for (let left = ready.length; left > 0; left -= 1) {
      const i = Math.floor(random() * left);
      const drawn = ready[i] as V1Pod;
      ready[i] = ready[left - 1] as V1Pod;
      yield warmPodOf(drawn);
    }
  }
  return { ready: ready.length, draws: draws() };
}

/** Whether `object` is one of `template`'s unclaimed pool pods, with a name and a uid. */
function isPoolPod(object: V1Pod, template: string): boolean {
  const metadata = object.metadata;
  return (
    Boolean(metadata?.name && metadata.uid) && metadata?.labels?.[POD_LABELS.warmPool] === template
  );
}

/** A pool pod ({@link isPoolPod}) read into a {@link WarmPod}. */
function warmPodOf(object: V1Pod): WarmPod {
  const metadata = object.metadata ?? {};
  const created = metadata.creationTimestamp;
  return {
    name: metadata.name ?? '',
    uid: metadata.uid ?? '',
    resourceVersion: metadata.resourceVersion,
    diskMib: Number(metadata.annotations?.[POD_ANNOTATIONS.diskMib] ?? NaN),
    podIp: object.status?.podIP,
    phase: object.status?.phase,
    nodeName: object.spec?.nodeName,
    createdAtMs: created ? new Date(created).getTime() : undefined,
    terminating: Boolean(metadata.deletionTimestamp),
    object,
  };
}

/** The sandbox a claim hands a warm pod to. */
export interface WarmPodClaim {
  sandboxId: string;
  /** The sandbox's tenant, labelled on the claimed pod; absent: no tenant label. */
  tenant?: string;
  generation: number;
  template: string;
}

/**
 * Claims a warm pod for a sandbox: one update (PUT) of the pod as listed, with its
 * resourceVersion, that removes the pool label and sets the sandbox id label, the generation
 * annotation and `claimed-from`. Another claimer (another worker, another create) that updated
 * it first makes this one answer 409, so each pod goes to one sandbox.
 * @returns the claimed pod, or undefined when it was claimed, changed or deleted meanwhile
 *   (409, 404)
 * @throws the client's ApiException for other apiserver errors
 */
export async function claimWarmPod(
  client: KubernetesClient,
  pod: WarmPod,
  claim: WarmPodClaim,
): Promise<(PodRef & { podIp: string }) | undefined> {
  // Without a resourceVersion the update would be unconditional: never claim so.
  if (!pod.resourceVersion) return undefined;
  const body = structuredClone(pod.object);
  // Exactly the service's labels and annotations, no owner or finalizer: the sandbox's pod
  // answers to the service alone.
  body.metadata = {
    ...body.metadata,
    resourceVersion: pod.resourceVersion,
    labels: {
      [POD_LABELS.managedBy]: MANAGED_BY,
      [POD_LABELS.sandboxId]: claim.sandboxId,
      ...tenantLabels(claim.tenant),
    },
    annotations: {
      ...tenantAnnotations(claim.tenant),
      [POD_ANNOTATIONS.template]: claim.template,
      [POD_ANNOTATIONS.diskMib]: String(pod.diskMib),
      [POD_ANNOTATIONS.generation]: String(claim.generation),
      [POD_ANNOTATIONS.claimedFrom]: claim.template,
    },
    ownerReferences: undefined,
    finalizers: undefined,
  };
  try {
    const updated = await client.core.replaceNamespacedPod({
      name: pod.name,
      namespace: client.namespace,
      body,
    });
    return {
      name: pod.name,
      uid: updated.metadata?.uid ?? pod.uid,
      resourceVersion: updated.metadata?.resourceVersion,
      podIp: updated.status?.podIP ?? pod.podIp ?? '',
    };
  } catch (err) {
    const status = httpStatusOf(err);
    if (status === 409 || status === 404) return undefined;
    throw err;
  }
}

/**
 * The pod a sandbox generation already claimed (an earlier attempt of the same claim whose
 * answer was lost): one LIST by the sandbox id label.
 * @returns the pod with its IP ('' if it has none any more), or undefined
 * @throws the client's ApiException for apiserver errors
 */
export async function findClaimedPod(
  client: KubernetesClient,
  claim: WarmPodClaim,
): Promise<(PodRef & { podIp: string }) | undefined> {
  const list = await client.core.listNamespacedPod({
    namespace: client.namespace,
    labelSelector: `${POD_LABELS.sandboxId}=${claim.sandboxId}`,
  });
  const pod = list.items.find(
    (item) =>
      item.metadata?.annotations?.[POD_ANNOTATIONS.claimedFrom] === claim.template &&
      item.metadata?.annotations?.[POD_ANNOTATIONS.generation] === String(claim.generation) &&
      !item.metadata?.deletionTimestamp,
  );
  const { name, uid, resourceVersion } = pod?.metadata ?? {};
  if (!pod || !name || !uid) return undefined;
  return { name, uid, resourceVersion, podIp: pod.status?.podIP ?? '' };
}

/**
 * Creates a warm pod.
 * @returns the pod as created
 * @throws the client's ApiException for apiserver errors (a 409 on the random name included)
 */
export async function createWarmPod(
  client: KubernetesClient,
  input: WarmPodInput,
): Promise<PodRef> {
  const created = await client.core.createNamespacedPod({
    namespace: client.namespace,
    body: warmPodManifest(input),
  });
  const { name, uid, resourceVersion } = created.metadata ?? {};
  if (!name || !uid) throw new Error('apiserver returned a warm pod without a name or uid');
  return { name, uid, resourceVersion };
}

/**
 * The kubelet sandbox-failure events of the namespace (`FailedCreatePodSandBox` Warnings, one
 * LIST by field selector), for a reconcile to read its pending pods' refusals from.
 * @throws the client's ApiException for apiserver errors
 */
export async function listSandboxFailureEvents(client: KubernetesClient): Promise<CoreV1Event[]> {
  const list = await client.core.listNamespacedEvent({
    namespace: client.namespace,
    fieldSelector: `involvedObject.kind=Pod,reason=${FAILED_SANDBOX_EVENT.reason},type=${FAILED_SANDBOX_EVENT.type}`,
  });
  return list.items;
}

/** JSON of a value with keys sorted, `[]`/`{}`/absent alike as `null`. */
function canonical(value: unknown): string {
  const normalize = (v: unknown): unknown => {
    if (v === undefined || v === null) return null;
    if (Array.isArray(v)) return v.length === 0 ? null : v.map(normalize);
    if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>)
        .map(([k, inner]) => [k, normalize(inner)] as const)
        .filter(([, inner]) => inner !== null)
        .sort(([a], [b]) => a.localeCompare(b));
      return entries.length === 0 ? null : Object.fromEntries(entries);
    }
    return v;
  };
  return JSON.stringify(normalize(value));
}

/**
 * What a pool pod is made from, as a digest (hex SHA-256 of the canonical JSON of the image,
 * resources and pod settings): recorded with each pod the pool makes (store `warm_pods`), so a
 * catalog change makes the pool's earlier pods stale by comparing the service's own inputs,
 * never the pod as the cluster's admission may have changed it.
 */
export function warmPodFingerprint(input: WarmPodInput): string {
  return createHash('sha256')
    .update(canonical({ image: input.image, resources: input.resources, settings: input.settings }))
    .digest('hex');
}

/**
 * Deletes a pool pod only if it is still the object the pool read: uid and resourceVersion
 * preconditions (Kubernetes `DeleteOptions.preconditions`), so a pod claimed since (its update
 * changed the resourceVersion) is never deleted by a reconcile or a sweep working from an older
 * read.
 * @returns `deleted`, or `skipped` when it is gone or changed (404, 409)
 * @throws the client's ApiException for other apiserver errors
 */
export async function deletePoolPod(
  client: KubernetesClient,
  pod: PodRef,
): Promise<'deleted' | 'skipped'> {
  try {
    await client.core.deleteNamespacedPod({
      name: pod.name,
      namespace: client.namespace,
      body: {
        preconditions: {
          uid: pod.uid,
          ...(pod.resourceVersion ? { resourceVersion: pod.resourceVersion } : {}),
        },
      },
    });
    return 'deleted';
  } catch (err) {
    const status = httpStatusOf(err);
    if (status === 404 || status === 409) return 'skipped';
    throw err;
  }
}
