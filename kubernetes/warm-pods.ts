/**
 * A warm pool's pods on the apiserver (docs/architecture.md, "Warm pools"): made like a
 * sandbox's pod but named `warm-<template>-<random>` and labelled with their pool instead of a
 * sandbox id, listed by that label, and claimed by one update that swaps the pool label for the
 * sandbox's id under the pod's resourceVersion, so the apiserver hands each pod to exactly one
 * claimer (Kubernetes API concepts, "Resource versions": an update whose resourceVersion is not
 * the current one answers 409 Conflict).
 */
import { randomBytes } from 'node:crypto';
import type {
  CoreV1Event,
  V1Container,
  V1Pod,
  V1ResourceRequirements,
} from '@kubernetes/client-node';
import type { SandboxPodSettings, SandboxResources } from '../contract/index.js';
import { httpStatusOf, type KubernetesClient } from './client.js';
import { MANAGED_BY, POD_ANNOTATIONS, POD_LABELS, sandboxPod } from './pod-spec.js';
import type { PodRef } from './pods.js';
import { REFUSAL_RULES } from './refusal.js';

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
    name: `warm-${input.template}-${suffix}`.slice(0, 63),
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
  image: string;
  /** Requests of its one container, as written: `cpu` quantity, `memory` `<n>Mi`. */
  cpu?: string;
  memory?: string;
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
  return !pod.terminating && pod.phase === 'Running' && Boolean(pod.podIp);
}

/** The selector of every unclaimed pool pod (any template). */
export const WARM_POOL_SELECTOR = `${POD_LABELS.managedBy}=${MANAGED_BY},${POD_LABELS.warmPool}`;

/**
 * The unclaimed pods of a template's pool (one LIST by label).
 * @throws the client's ApiException for apiserver errors
 */
export async function listWarmPods(client: KubernetesClient, template: string): Promise<WarmPod[]> {
  const list = await client.core.listNamespacedPod({
    namespace: client.namespace,
    labelSelector: `${POD_LABELS.managedBy}=${MANAGED_BY},${POD_LABELS.warmPool}=${template}`,
  });
  return warmPodsOf(list.items, template);
}

/** The pods of `objects` that are `template`'s unclaimed pool pods, as {@link WarmPod}s. */
export function warmPodsOf(objects: readonly V1Pod[], template: string): WarmPod[] {
  return objects.flatMap((object) => {
    const { name, uid, resourceVersion } = object.metadata ?? {};
    if (!name || !uid || object.metadata?.labels?.[POD_LABELS.warmPool] !== template) return [];
    const container = object.spec?.containers?.[0];
    const created = object.metadata?.creationTimestamp;
    return [
      {
        name,
        uid,
        resourceVersion,
        image: container?.image ?? '',
        cpu: container?.resources?.requests?.cpu,
        memory: container?.resources?.requests?.memory,
        diskMib: Number(object.metadata?.annotations?.[POD_ANNOTATIONS.diskMib] ?? NaN),
        podIp: object.status?.podIP,
        phase: object.status?.phase,
        nodeName: object.spec?.nodeName,
        createdAtMs: created ? new Date(created).getTime() : undefined,
        terminating: Boolean(object.metadata?.deletionTimestamp),
        object,
      },
    ];
  });
}

/** The sandbox a claim hands a warm pod to. */
export interface WarmPodClaim {
  sandboxId: string;
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
  const body = structuredClone(pod.object);
  const labels = { ...(body.metadata?.labels ?? {}) };
  delete labels[POD_LABELS.warmPool];
  labels[POD_LABELS.sandboxId] = claim.sandboxId;
  body.metadata = {
    ...body.metadata,
    labels,
    annotations: {
      ...(body.metadata?.annotations ?? {}),
      [POD_ANNOTATIONS.generation]: String(claim.generation),
      [POD_ANNOTATIONS.claimedFrom]: claim.template,
    },
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
 * @returns the pod with its IP, or undefined
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
  if (!pod || !name || !uid || !pod.status?.podIP) return undefined;
  return { name, uid, resourceVersion, podIp: pod.status.podIP };
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
    fieldSelector: `involvedObject.kind=Pod,reason=${REFUSAL_RULES.reason},type=${REFUSAL_RULES.type}`,
  });
  return list.items;
}

/** The default tolerations the apiserver's DefaultTolerationSeconds admission adds to a pod. */
const DEFAULT_TOLERATION_KEYS: ReadonlySet<string> = new Set([
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
]);

/** JSON of a value with keys sorted, `[]`/`{}`/absent alike as `null`, for comparing specs. */
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
 * Whether a listed pool pod is one the pool would make for `input` (docs/security.md, "Warm
 * pools"): the label says nothing about who made it, and anyone who may create pods in the
 * namespace could plant one, so before a pod is handed to a tenant its spec must be ours: one
 * container with the catalog's image and resources, the same security contexts, RuntimeClass,
 * node selector and tolerations (besides the apiserver's DefaultTolerationSeconds pair), and
 * nothing we never set: no command or args, env, mounts, volumes, init or ephemeral
 * containers, host namespaces, affinity, or a service account other than `default`.
 */
export function isMadeAsWarmPod(pod: V1Pod, input: WarmPodInput): boolean {
  return warmPodMatcher(input)(pod);
}

/**
 * {@link isMadeAsWarmPod} for many pods of one pool: the expected spec is built once.
 * @returns a predicate over listed pods
 */
export function warmPodMatcher(input: WarmPodInput): (pod: V1Pod) => boolean {
  const expected = warmPodManifest(input).spec!;
  const [want] = expected.containers;
  const wantContainer = want ? canonical(containerOf(want)) : '';
  const wantSecurity = canonical(expected.securityContext);
  const wantRuntimeClass = canonical(expected.runtimeClassName);
  const wantNodeSelector = canonical(expected.nodeSelector);
  const wantTolerations = canonical(expected.tolerations);
  return (pod) => {
    const actual = pod.spec;
    if (!actual) return false;
    const [container, ...others] = actual.containers ?? [];
    if (!container || others.length > 0) return false;
    const tolerations = (actual.tolerations ?? []).filter(
      (t) => !(t.effect === 'NoExecute' && t.key && DEFAULT_TOLERATION_KEYS.has(t.key)),
    );
    return (
      !actual.hostNetwork &&
      !actual.hostPID &&
      !actual.hostIPC &&
      actual.automountServiceAccountToken === false &&
      (actual.serviceAccountName ?? 'default') === 'default' &&
      canonical(containerOf(container)) === wantContainer &&
      canonical(actual.securityContext) === wantSecurity &&
      canonical(actual.runtimeClassName) === wantRuntimeClass &&
      canonical(actual.nodeSelector) === wantNodeSelector &&
      canonical(tolerations) === wantTolerations &&
      canonical(actual.initContainers) === 'null' &&
      canonical(actual.ephemeralContainers) === 'null' &&
      canonical(actual.volumes) === 'null' &&
      canonical(actual.affinity) === 'null'
    );
  };
}

/** The container fields a pool pod's check compares (everything a pod could be armed with). */
function containerOf(c: V1Container) {
  return {
    name: c.name,
    image: c.image,
    command: c.command,
    args: c.args,
    env: c.env,
    envFrom: c.envFrom,
    volumeMounts: c.volumeMounts,
    volumeDevices: c.volumeDevices,
    securityContext: c.securityContext,
    // As the apiserver stores them: quantities canonical ("2048Mi" is "2Gi"), a request it
    // lacks defaulted to its limit.
    resources: resourcesOf(c.resources),
  };
}

/**
 * A container's requests and limits as values (bytes, cores), a missing request taken from its
 * limit, as the apiserver defaults it (core/v1 defaults: "If Requests is omitted for a container,
 * it defaults to Limits"); a quantity that does not parse is kept as text, so it never matches.
 */
function resourcesOf(resources: V1ResourceRequirements | undefined): unknown {
  const limits = resources?.limits ?? {};
  const requests = { ...limits, ...(resources?.requests ?? {}) };
  const values = (quantities: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(quantities).map(([key, quantity]) => [
        key,
        quantityValue(quantity) ?? quantity,
      ]),
    );
  return { limits: values(limits), requests: values(requests) };
}

const QUANTITY_SUFFIXES: Readonly<Record<string, number>> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * The value of a Kubernetes quantity (`"500m"` is 0.5, `"2Gi"` 2147483648), rounded to
 * millis so equal quantities in different spellings compare equal (apimachinery
 * `resource.Quantity`); undefined when it is not one.
 */
export function quantityValue(quantity: string): number | undefined {
  const match = /^([+-]?[0-9.]+)([a-zA-Z]*)$/.exec(quantity.trim());
  const multiplier = match ? QUANTITY_SUFFIXES[match[2] ?? ''] : undefined;
  if (!match || multiplier === undefined) return undefined;
  const value = Number(match[1]) * multiplier;
  return Number.isFinite(value) ? Math.round(value * 1000) / 1000 : undefined;
}
