/**
 * The node's pure rules, shared by the simulated node (simulated-cluster/node.ts) and the node
 * agent that plays kubelet on a real apiserver (node-agent/): which sandboxes the runtime
 * refuses and with what message, the refusal back-off, and the kubelet-shaped event message
 * of each repeated refusal. No I/O, no clock.
 */

/** Annotation naming the sandbox template (its rootfs size is the node's configuration). */
export const TEMPLATE_ANNOTATION = 'durable-sandbox.dev/template';
/** Annotation with the requested disk size in MiB. */
export const DISK_ANNOTATION = 'durable-sandbox.dev/disk-mib';
/** Reason kubelet records when the runtime refuses a pod sandbox. */
export const SANDBOX_FAILURE_REASON = 'FailedCreatePodSandBox';
/** Prefix of kubelet's aggregated event message. */
export const COMBINED_PREFIX = '(combined from similar events): ';
/**
 * Occurrences of a refusal recorded on the first event (count 1..10); from the next one on,
 * kubelet's aggregation records a new event whose message starts with COMBINED_PREFIX (the
 * simulated node's model of aggregation).
 */
export const OCCURRENCES_BEFORE_AGGREGATION = 10;

/** A runtime refusal: gRPC code (the `[space-err=<code>]` marker) and message. */
export interface ScriptedRefusal {
  code: string;
  message: string;
}

/** Builds the kubelet message for a runtime refusal with the shim's `[space-err=<code>]` marker. */
export function sandboxFailureMessage(code: string, detail: string): string {
  return `Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=${code}] ${detail}`;
}

/**
 * What the runtime shim says about a pod from its annotations; null when it can run.
 * @param annotations the pod's `metadata.annotations`
 * @param rootfsMib template name -> rootfs size in MiB on the node
 * @param nodeName named in the message of a template the node does not have
 */
export function refusalFor(
  annotations: Record<string, string>,
  rootfsMib: Record<string, number>,
  nodeName: string,
): ScriptedRefusal | null {
  const template = annotations[TEMPLATE_ANNOTATION];
  if (template === undefined) return null;
  const rootfs = rootfsMib[template];
  if (rootfs === undefined) {
    return {
      code: 'InvalidArgument',
      message: `template ${template} is not present on node ${nodeName}`,
    };
  }
  const rawDisk = annotations[DISK_ANNOTATION];
  if (rawDisk === undefined) return null;
  const disk = Number(rawDisk);
  if (!Number.isInteger(disk) || disk <= 0) {
    return { code: 'InvalidArgument', message: `rootfs_size_mb=${rawDisk} is not a valid size` };
  }
  if (disk < rootfs) {
    return {
      code: 'InvalidArgument',
      message: `rootfs_size_mb=${disk} is smaller than cloned rootfs size ${rootfs} MiB`,
    };
  }
  return null;
}

/**
 * The event message kubelet records for the n-th occurrence (1-based) of the same refusal:
 * the message itself up to OCCURRENCES_BEFORE_AGGREGATION, then with COMBINED_PREFIX.
 */
export function refusalEventMessage(occurrence: number, message: string): string {
  return occurrence > OCCURRENCES_BEFORE_AGGREGATION ? `${COMBINED_PREFIX}${message}` : message;
}

/**
 * Delay (ms) before the next refusal after the n-th (1-based): `baseMs` doubling, capped at
 * `maxMs` (kubelet's pod worker back-off).
 */
export function refusalBackoffMs(occurrence: number, baseMs: number, maxMs: number): number {
  return Math.min(baseMs * 2 ** (occurrence - 1), maxMs);
}

/** The node's host IP, as `status.hostIP`. */
export const NODE_HOST_IP = '192.168.49.2';

/**
 * The n-th pod IP (0-based) a node hands out: 10.<244 + nodeIndex>.<n / 253>.<n % 253 + 2>, so
 * the nodes of one cluster (nodeIndex 0, 1, …) never hand out the same IP.
 */
export function podIpFor(n: number, nodeIndex = 0): string {
  return `10.${244 + nodeIndex}.${Math.floor(n / 253)}.${(n % 253) + 2}`;
}

/**
 * The `status` of a pod the node started: phase Running, the conditions kubelet sets, host and
 * pod IPs, and one running container status per container.
 * @param containers the pod's `spec.containers` (name and image are read)
 * @param nowIso an RFC 3339 timestamp for the transitions and start times
 * @param containerId e.g. `containerd://<64 hex>`, one per container in order
 */
export function runningPodStatus(
  containers: Array<{ name?: unknown; image?: unknown }>,
  podIp: string,
  nowIso: string,
  containerId: (index: number) => string,
): Record<string, unknown> {
  return {
    phase: 'Running',
    conditions: [
      'PodReadyToStartContainers',
      'Initialized',
      'Ready',
      'ContainersReady',
      'PodScheduled',
    ].map((type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: nowIso })),
    hostIP: NODE_HOST_IP,
    hostIPs: [{ ip: NODE_HOST_IP }],
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: nowIso,
    containerStatuses: containers.map((container, index) => ({
      name: container.name,
      image: container.image,
      imageID: '',
      containerID: containerId(index),
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: nowIso } },
    })),
  };
}
