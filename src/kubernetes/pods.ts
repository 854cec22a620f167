/**
 * Creating and deleting sandbox pods, both idempotent so Temporal may retry them freely.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { httpStatusOf, type KubernetesClient } from './client.js';
import {
  MANAGED_BY,
  POD_ANNOTATIONS,
  POD_LABELS,
  placementOf,
  podNameFor,
  sandboxPod,
  type SandboxPodInput,
} from './pod-spec.js';

/** A pod as the create path tracks it. */
export interface PodRef {
  name: string;
  uid: string;
  /**
   * The pod's resourceVersion when the create saw it; the readiness wait watches from there, so
   * a deletion it did not see live is still replayed to it.
   */
  resourceVersion?: string;
}

/** Thrown when the pod name is taken by a pod that is not this sandbox generation's. */
export class PodNameTakenError extends Error {
  constructor(readonly podName: string) {
    super(`pod ${podName} exists but does not belong to this sandbox generation`);
    this.name = 'PodNameTakenError';
  }
}

/**
 * Creates the sandbox pod, or adopts it when a pod of the same name already carries this
 * sandbox's id label and generation annotation (an earlier attempt of the same step created it).
 * @returns the pod's name and uid, and whether it was adopted
 * @throws PodNameTakenError when the name belongs to another sandbox or generation
 * @throws the client's ApiException for any other apiserver error (Temporal retries the step)
 */
export async function createPod(
  client: KubernetesClient,
  input: SandboxPodInput,
): Promise<PodRef & { adopted: boolean }> {
  const manifest = sandboxPod(input);
  const name = manifest.metadata?.name as string;
  try {
    const created = await client.core.createNamespacedPod({
      namespace: client.namespace,
      body: manifest,
    });
    return {
      name,
      uid: uidOf(created),
      resourceVersion: created.metadata?.resourceVersion,
      adopted: false,
    };
  } catch (err) {
    if (httpStatusOf(err) !== 409) throw err;
  }
  const existing = await client.core.readNamespacedPod({ name, namespace: client.namespace });
  if (
    !belongsTo(existing, input.sandboxId, input.generation, input.placement ?? 1) ||
    existing.metadata?.deletionTimestamp
  ) {
    throw new PodNameTakenError(name);
  }
  return {
    name,
    uid: uidOf(existing),
    resourceVersion: existing.metadata?.resourceVersion,
    adopted: true,
  };
}

/**
 * Finds the pod of a sandbox generation's placement (default 1) by its deterministic name, for compensation that runs
 * before the create learned the pod's uid (e.g. cancelled while `createPod` was in flight).
 * @returns the pod when it exists and carries this sandbox's id label and generation; else undefined
 * @throws the client's ApiException for apiserver errors other than 404
 */
export async function findSandboxPod(
  client: KubernetesClient,
  sandboxId: string,
  generation: number,
  placement = 1,
): Promise<PodRef | undefined> {
  const name = podNameFor(sandboxId, generation, placement);
  try {
    const pod = await client.core.readNamespacedPod({ name, namespace: client.namespace });
    return belongsTo(pod, sandboxId, generation, placement) ? { name, uid: uidOf(pod) } : undefined;
  } catch (err) {
    if (httpStatusOf(err) === 404) return undefined;
    throw err;
  }
}

/** A pod the service manages, as {@link listSandboxPods} reads it. */
export interface SandboxPod extends PodRef {
  sandboxId: string;
  /** From the generation annotation; NaN when missing or malformed. */
  generation: number;
  /** The placement annotation as {@link placementOf} reads it (absent: 1; NaN when malformed). */
  placement: number;
  /** `metadata.creationTimestamp`. */
  createdAt?: Date;
  /** Whether the pod is already being deleted (`metadata.deletionTimestamp` set). */
  terminating: boolean;
}

/**
 * Every pod in the namespace labelled `app.kubernetes.io/managed-by=durable-sandbox` that
 * carries a sandbox id (one list; used by the orphan sweeper, not by the readiness wait).
 * @throws the client's ApiException for apiserver errors
 */
export async function listSandboxPods(client: KubernetesClient): Promise<SandboxPod[]> {
  return (await listManagedPods(client)).sandboxPods;
}

/** An unclaimed warm pool pod as the orphan sweeper reads it. */
export interface PoolPod extends PodRef {
  /** The template whose pool it is (its warm-pool label). */
  template: string;
  createdAt?: Date;
  terminating: boolean;
}

/**
 * Every pod in the namespace labelled `app.kubernetes.io/managed-by=durable-sandbox` (one list):
 * those that carry a sandbox id, and the unclaimed warm pool pods.
 * @throws the client's ApiException for apiserver errors
 */
export async function listManagedPods(
  client: KubernetesClient,
): Promise<{ sandboxPods: SandboxPod[]; poolPods: PoolPod[] }> {
  const list = await client.core.listNamespacedPod({
    namespace: client.namespace,
    labelSelector: `${POD_LABELS.managedBy}=${MANAGED_BY}`,
  });
  const poolPods = list.items.flatMap((pod) => {
    const template = pod.metadata?.labels?.[POD_LABELS.warmPool];
    const { name, uid } = pod.metadata ?? {};
    if (!template || !name || !uid || pod.metadata?.labels?.[POD_LABELS.sandboxId]) return [];
    const created = pod.metadata?.creationTimestamp;
    return [
      {
        name,
        uid,
        resourceVersion: pod.metadata?.resourceVersion,
        template,
        createdAt: created ? new Date(created) : undefined,
        terminating: Boolean(pod.metadata?.deletionTimestamp),
      },
    ];
  });
  const sandboxPods = list.items.flatMap((pod) => {
    const sandboxId = pod.metadata?.labels?.[POD_LABELS.sandboxId];
    const { name, uid } = pod.metadata ?? {};
    if (!sandboxId || !name || !uid) return [];
    const created = pod.metadata?.creationTimestamp;
    return [
      {
        name,
        uid,
        resourceVersion: pod.metadata?.resourceVersion,
        sandboxId,
        generation: Number(pod.metadata?.annotations?.[POD_ANNOTATIONS.generation] ?? NaN),
        placement: placementOf(pod),
        createdAt: created ? new Date(created) : undefined,
        terminating: Boolean(pod.metadata?.deletionTimestamp),
      },
    ];
  });
  return { sandboxPods, poolPods };
}

function belongsTo(pod: V1Pod, sandboxId: string, generation: number, placement: number): boolean {
  const annotations = pod.metadata?.annotations ?? {};
  return (
    pod.metadata?.labels?.[POD_LABELS.sandboxId] === sandboxId &&
    annotations[POD_ANNOTATIONS.generation] === String(generation) &&
    (annotations[POD_ANNOTATIONS.placement] ?? '1') === String(placement)
  );
}

/** What {@link deletePod} found. */
export type DeletePodOutcome =
  /** The apiserver accepted the delete. */
  | 'deleted'
  /** No pod of that name: already gone (counts as done). */
  | 'absent'
  /** A pod of that name with another uid exists: a newer pod owns the name; left alone. */
  | 'replaced';

/**
 * Deletes the pod with a uid precondition, so a newer pod that reuses the name survives.
 * 404 counts as done and 409 (precondition failed) means a newer pod owns the name.
 * Source: Kubernetes API `DeleteOptions.preconditions.uid`.
 * @throws the client's ApiException for any other apiserver error (Temporal retries the step)
 */
export async function deletePod(client: KubernetesClient, pod: PodRef): Promise<DeletePodOutcome> {
  try {
    await client.core.deleteNamespacedPod({
      name: pod.name,
      namespace: client.namespace,
      body: { preconditions: { uid: pod.uid } },
    });
    return 'deleted';
  } catch (err) {
    const status = httpStatusOf(err);
    if (status === 404) return 'absent';
    if (status === 409) return 'replaced';
    throw err;
  }
}

function uidOf(pod: V1Pod): string {
  const uid = pod.metadata?.uid;
  if (!uid) throw new Error(`apiserver returned pod ${pod.metadata?.name} without a uid`);
  return uid;
}
