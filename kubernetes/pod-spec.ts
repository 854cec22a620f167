/**
 * The pod that runs one sandbox (docs/architecture.md, "The pod"): labels, annotations, and
 * resources.
 * The name is deterministic per sandbox and generation so a retried create finds its own pod.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { SandboxResources } from '../contract/index.js';

/** Label and annotation keys the service sets and reads. */
export const POD_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  sandboxId: 'durable-sandbox.dev/sandbox-id',
} as const;
export const POD_ANNOTATIONS = {
  template: 'durable-sandbox.dev/template',
  diskMib: 'durable-sandbox.dev/disk-mib',
  generation: 'durable-sandbox.dev/generation',
} as const;
export const MANAGED_BY = 'durable-sandbox';

/** What a sandbox pod is made from (resources: cpu in cores, sizes in MiB). */
export interface SandboxPodInput {
  sandboxId: string;
  generation: number;
  template: string;
  image: string;
  resources: SandboxResources;
}

/**
 * The pod name of a sandbox generation: `<sandbox id with _ as ->-g<generation>`, lowercased,
 * which is a valid DNS-1123 name for ids made of [a-z0-9_].
 */
export function podNameFor(sandboxId: string, generation: number): string {
  return `${sandboxId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-g${generation}`;
}

/** Builds the pod manifest for one sandbox generation. */
export function sandboxPod(input: SandboxPodInput): V1Pod {
  const { cpu, memoryMib, diskMib } = input.resources;
  const limits = {
    cpu: String(cpu),
    memory: `${memoryMib}Mi`,
    'ephemeral-storage': `${diskMib}Mi`,
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameFor(input.sandboxId, input.generation),
      labels: { [POD_LABELS.managedBy]: MANAGED_BY, [POD_LABELS.sandboxId]: input.sandboxId },
      annotations: {
        [POD_ANNOTATIONS.template]: input.template,
        [POD_ANNOTATIONS.diskMib]: String(diskMib),
        [POD_ANNOTATIONS.generation]: String(input.generation),
      },
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'sandbox',
          image: input.image,
          resources: {
            requests: { cpu: limits.cpu, memory: limits.memory },
            limits,
          },
        },
      ],
    },
  };
}
