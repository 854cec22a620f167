/**
 * The pod that runs one sandbox (docs/architecture.md, "The pod"): labels, annotations,
 * resources, the restrictive securityContext every sandbox gets and its template's isolation
 * settings (runtimeClassName, nodeSelector, tolerations), and for a re-placement the required node affinity that keeps it off the nodes that
 * refused it (docs/architecture.md, "Re-placement").
 * The name is deterministic per sandbox, generation and placement so a retried create finds its
 * own pod.
 */
import { createHash } from 'node:crypto';
import type { V1Pod, V1PodSecurityContext, V1SecurityContext } from '@kubernetes/client-node';
import {
  cpuQuantity,
  isLabelValue,
  type SandboxPodSettings,
  type SandboxResources,
} from '../../contract/index.js';

/** Label and annotation keys the service sets and reads. */
export const POD_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  sandboxId: 'durable-sandbox.dev/sandbox-id',
  /** On a warm pool's unclaimed pod: the template whose pool it is (src/kubernetes/warm-pods.ts). */
  warmPool: 'durable-sandbox.dev/warm-pool',
  /**
   * The sandbox's tenant ({@link tenantLabelValue}), so cost tools and policies can count a
   * tenant's pods. The service's label: a caller's own labels are never on the pod.
   */
  tenant: 'durable-sandbox.dev/tenant',
} as const;
export const POD_ANNOTATIONS = {
  template: 'durable-sandbox.dev/template',
  diskMib: 'durable-sandbox.dev/disk-mib',
  generation: 'durable-sandbox.dev/generation',
  /** Set from the second placement on (absent: placement 1). */
  placement: 'durable-sandbox.dev/placement',
  /** On a claimed warm pod: the template whose pool it came from. */
  claimedFrom: 'durable-sandbox.dev/claimed-from',
  /**
   * The create operation that made the pod (= its workflow id): any worker completes the pod's
   * readiness wait by workflow id and activity id (src/verdict/readiness-decider.ts).
   */
  operationId: 'durable-sandbox.dev/operation-id',
  /**
   * On a re-placing create's pod: the shim codes of the template's `replace_on`, comma
   * separated, which also end its readiness wait (contract/placement.ts, WaitPlacement).
   */
  replaceOn: 'durable-sandbox.dev/replace-on',
  /** The tenant as it is, on a pod whose tenant label had to be hashed ({@link tenantLabelValue}). */
  tenant: 'durable-sandbox.dev/tenant',
} as const;

/** The form of a hashed tenant label value: an optional readable prefix, then `h` and 32 hex. */
const HASHED_TENANT = /(^|-)h[0-9a-f]{32}$/;

/**
 * The value of a pod's tenant label ({@link POD_LABELS.tenant}): the tenant itself when it is a
 * valid label value (at most 63 of [A-Za-z0-9-_.], starting and ending with an alphanumeric:
 * Kubernetes' `IsValidLabelValue`), else a readable prefix of it (its label characters, at most
 * 28) and `-h` with 32 hex digits of its SHA-256, or `h` and the digits alone. One tenant, one
 * value, and two tenants never share one: a tenant that is itself of the hashed form is hashed
 * too, so no tenant can name itself after another's hash. The tenant as it is then goes in the
 * annotation of the same name ({@link tenantAnnotations}).
 */
export function tenantLabelValue(tenant: string): string {
  if (tenant !== '' && isLabelValue(tenant) && !HASHED_TENANT.test(tenant)) return tenant;
  const digest = createHash('sha256').update(tenant, 'utf8').digest('hex').slice(0, 32);
  const readable = tenant
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .slice(0, 28)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return readable ? `${readable}-h${digest}` : `h${digest}`;
}

/** The pod's tenant label ({@link tenantLabelValue}); none without a tenant. */
export function tenantLabels(tenant: string | undefined): Record<string, string> {
  return tenant === undefined ? {} : { [POD_LABELS.tenant]: tenantLabelValue(tenant) };
}

/** The tenant as it is, annotated when its label had to be hashed; else none. */
export function tenantAnnotations(tenant: string | undefined): Record<string, string> {
  return tenant === undefined || tenantLabelValue(tenant) === tenant
    ? {}
    : { [POD_ANNOTATIONS.tenant]: tenant };
}
/** The node label kubelet sets to the node's name, which the re-placement affinity reads. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
export const MANAGED_BY = 'durable-sandbox';

/** What a sandbox pod is made from (resources: cpu in cores, sizes in MiB). */
export interface SandboxPodInput {
  /** The create operation (= workflow id) the pod is made for; absent: no annotation. */
  operationId?: string;
  /** The sandbox's tenant, labelled on the pod ({@link tenantLabelValue}); absent: no label. */
  tenant?: string;
  sandboxId: string;
  generation: number;
  template: string;
  image: string;
  resources: SandboxResources;
  /** Which placement of the generation this pod is (1-based; default 1). */
  placement?: number;
  /** A re-placing create's `replace_on` codes (annotated on the pod); absent: it does not re-place. */
  replaceOn?: readonly string[];
  /**
   * Nodes the pod must not run on (those that refused earlier placements): a required node
   * affinity `kubernetes.io/hostname NotIn [...]`. Empty or absent: no affinity.
   */
  avoidNodes?: string[];
  /**
   * The template's isolation settings, from the worker's own catalog (src/config/pod-settings.ts).
   * Absent: the defaults (root allowed, no RuntimeClass, node selector or tolerations).
   */
  settings?: SandboxPodSettings;
}

/**
 * The pod-level securityContext of every sandbox: the container runtime's default seccomp
 * profile, and `runAsNonRoot` unless the template opted out (`run_as_root`, for an image that
 * needs root; settings without a word on it run as non-root). With `runAsNonRoot` (and
 * {@link SANDBOX_CONTAINER_SECURITY}) the pod meets Pod Security `restricted` (Kubernetes, "Pod
 * Security Standards"); without it, `baseline`.
 */
export function sandboxPodSecurity(settings?: SandboxPodSettings): V1PodSecurityContext {
  return {
    seccompProfile: { type: 'RuntimeDefault' },
    ...(settings?.runAsNonRoot === false ? {} : { runAsNonRoot: true }),
  };
}

/**
 * The container-level securityContext of every sandbox: no privilege escalation (no setuid
 * gains, `no_new_privs`), and every Linux capability dropped, as Pod Security `restricted`
 * requires (it allows adding back only NET_BIND_SERVICE; none is added).
 */
export const SANDBOX_CONTAINER_SECURITY: Readonly<V1SecurityContext> = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
};

/**
 * The pod name of a sandbox generation's placement: `<sandbox id with _ as ->-g<generation>`,
 * lowercased, and `-p<placement>` from the second placement on (so placement 1 keeps the name
 * pods had before re-placement); a valid DNS-1123 name for ids made of [a-z0-9_].
 */
export function podNameFor(sandboxId: string, generation: number, placement = 1): string {
  const base = `${sandboxId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-g${generation}`;
  return placement > 1 ? `${base}-p${placement}` : base;
}

/**
 * The placement a pod name of {@link podNameFor} stands for, for a sandbox generation: 1 for
 * `…-g<generation>`, n for `…-g<generation>-p<n>` (n >= 2).
 * @returns undefined when the name is not one of this sandbox generation's pod names
 */
export function placementOfPodName(
  podName: string,
  sandboxId: string,
  generation: number,
): number | undefined {
  const base = podNameFor(sandboxId, generation);
  if (podName === base) return 1;
  const suffix = /^-p([1-9][0-9]*)$/.exec(podName.slice(base.length));
  if (!podName.startsWith(base) || !suffix) return undefined;
  const placement = Number(suffix[1]);
  return placement >= 2 && podNameFor(sandboxId, generation, placement) === podName
    ? placement
    : undefined;
}

/**
 * The placement a pod says it is, from the placement annotation {@link sandboxPod} writes from
 * the second placement on. Read by the readiness wait (src/verdict/pod-wait.ts) and the orphan
 * sweeper's pod list (src/kubernetes/pods.ts, `listSandboxPods`).
 * @returns 1 when the annotation is absent (placement 1 has none), else `Number()` of its value:
 *   NaN when malformed (`'abc'`; NaN is neither above 1 nor below any placement), 0 when empty
 */
export function placementOf(pod: V1Pod): number {
  return Number(pod.metadata?.annotations?.[POD_ANNOTATIONS.placement] ?? '1');
}

/**
 * Builds the pod manifest for one sandbox generation. Requests equal limits: cpu as the
 * canonical Kubernetes quantity (`"2"`, `"500m"`: contract/cpu.ts), memory and ephemeral
 * storage in `Mi`. The securityContext is {@link sandboxPodSecurity} and
 * {@link SANDBOX_CONTAINER_SECURITY}; `settings` adds the template's RuntimeClass, node selector
 * and tolerations.
 */
export function sandboxPod(input: SandboxPodInput): V1Pod {
  const { cpu, memoryMib, diskMib } = input.resources;
  const placement = input.placement ?? 1;
  const avoidNodes = input.avoidNodes ?? [];
  const settings = input.settings;
  const limits = {
    cpu: cpuQuantity(cpu),
    memory: `${memoryMib}Mi`,
    'ephemeral-storage': `${diskMib}Mi`,
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameFor(input.sandboxId, input.generation, placement),
      labels: {
        [POD_LABELS.managedBy]: MANAGED_BY,
        [POD_LABELS.sandboxId]: input.sandboxId,
        ...tenantLabels(input.tenant),
      },
      annotations: {
        ...tenantAnnotations(input.tenant),
        [POD_ANNOTATIONS.template]: input.template,
        [POD_ANNOTATIONS.diskMib]: String(diskMib),
        [POD_ANNOTATIONS.generation]: String(input.generation),
        ...(placement > 1 ? { [POD_ANNOTATIONS.placement]: String(placement) } : {}),
        ...(input.operationId ? { [POD_ANNOTATIONS.operationId]: input.operationId } : {}),
        ...(input.replaceOn ? { [POD_ANNOTATIONS.replaceOn]: input.replaceOn.join(',') } : {}),
      },
    },
    spec: {
      ...(avoidNodes.length > 0
        ? {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    {
                      matchExpressions: [
                        { key: HOSTNAME_LABEL, operator: 'NotIn', values: [...avoidNodes] },
                      ],
                    },
                  ],
                },
              },
            },
          }
        : {}),
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      securityContext: sandboxPodSecurity(settings),
      ...(settings?.runtimeClassName ? { runtimeClassName: settings.runtimeClassName } : {}),
      ...(settings?.nodeSelector ? { nodeSelector: { ...settings.nodeSelector } } : {}),
      ...(settings?.tolerations
        ? { tolerations: settings.tolerations.map((t) => ({ ...t })) }
        : {}),
      containers: [
        {
          name: 'sandbox',
          image: input.image,
          securityContext: structuredClone(SANDBOX_CONTAINER_SECURITY),
          resources: {
            requests: { cpu: limits.cpu, memory: limits.memory },
            limits,
          },
        },
      ],
    },
  };
}
