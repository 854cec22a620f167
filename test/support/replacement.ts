/**
 * What the re-placement suites share (docs/architecture.md, "Re-placement"): the templates, the
 * node's "full" reason, the API stack over a cluster of several nodes, and the calls every
 * scenario makes (an asynchronous create, the sandbox's pods). test/replacement.test.ts runs them
 * on the simulated cluster, test/real-replacement.test.ts on the real apiserver tier.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Express } from 'express';
import {
  acceptedCreate,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './api.js';
import type { TestStackOptions } from './stack.js';

/** The reason a scripted node gives when it refuses with ResourceExhausted. */
export const FULL = 'no sandbox capacity left on the node';

/** SANDBOX_TEMPLATES of the suites. */
export const REPLACEMENT_TEMPLATES = {
  // Re-places on ResourceExhausted only: a node answering Unavailable is waited for.
  spread: { image: 'ghcr.io/durable-sandbox/base:1', replace_on: ['ResourceExhausted'] },
  // More placements than the three nodes: the fourth finds no node left.
  wide: {
    image: 'ghcr.io/durable-sandbox/base:1',
    replace_on: ['ResourceExhausted', 'Unavailable'],
    max_placements: 5,
  },
  // No replace_on: behaves as before re-placement.
  plain: { image: 'ghcr.io/durable-sandbox/base:1' },
};

/** Every template's rootfs on the nodes (MiB), for the cluster's or the agents' `rootfsMib`. */
export const REPLACEMENT_ROOTFS_MIB: Record<string, number> = Object.fromEntries(
  Object.keys(REPLACEMENT_TEMPLATES).map((name) => [name, 451]),
);

/** One refused placement as `details.placements` shows it. */
export interface Placement {
  placement: number;
  node: string;
  code: string;
  reason: string;
  at: string;
  pod_name: string;
}

/** An operation of a re-placing create. */
export type ReplacedOperation = OperationBody & {
  details: { placements: Placement[]; attempts: number | null };
};

/** What a re-placement suite gets. */
export interface ReplacementSuite {
  api: ApiStack;
  /** POST /v1/sandboxes (disk 2048) on `template` through `app` (default the suite's); expects 202. */
  createAsync(template: string, app?: Express): Promise<OperationBody>;
  /** The sandbox's pods, as the apiserver lists them in the service's namespace. */
  podsOf(sandboxId: string): Promise<V1Pod[]>;
  stop(): Promise<void>;
}

/**
 * Starts the API stack over `stack` (its cluster or apiserver target) with
 * {@link REPLACEMENT_TEMPLATES} and no floor learning (every refusal reaches the node).
 * Call `stop()` in afterAll.
 */
export async function startReplacementSuite(stack: TestStackOptions): Promise<ReplacementSuite> {
  const api = await startApiStack({
    stack: { ...stack, learnRootfsFloors: false },
    env: { SANDBOX_TEMPLATES: JSON.stringify(REPLACEMENT_TEMPLATES) },
  });
  return {
    api,
    createAsync(template, app = api.app) {
      return acceptedCreate(app, api.tenantA, createBody(2048, { template }));
    },
    async podsOf(sandboxId) {
      const { core, namespace } = api.stack.kubernetes;
      const list = await core.listNamespacedPod({
        namespace,
        labelSelector: `durable-sandbox.dev/sandbox-id=${sandboxId}`,
      });
      return list.items;
    },
    stop: () => api.stop(),
  };
}
