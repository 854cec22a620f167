/**
 * The sandbox as every layer names it: its resources, its states, the execution that fences
 * its writes, and the page-size bounds of its lists. Types, constants and pure functions only
 * (no Node imports), so the workflow bundle may import it. camelCase throughout; the HTTP
 * boundary spells these in snake_case (src/api/wire.ts, contract/sandbox-json.ts).
 */

/**
 * Requested resources: `cpu` in cores, positive, in steps of one millicore (at most three
 * decimals: contract/cpu.ts); `memoryMib` and `diskMib` in MiB, positive integers.
 */
export interface SandboxResources {
  cpu: number;
  memoryMib: number;
  diskMib: number;
}

/** Upper bounds of the requested resources: cores, MiB, MiB. */
export const RESOURCE_LIMITS: Readonly<SandboxResources> = {
  cpu: 64,
  memoryMib: 262_144,
  diskMib: 1_048_576,
};

/**
 * Lifecycle of a sandbox as the API reports it (docs/api.md). `lost`: it was `running`
 * and its pod is gone (failure code {@link POD_LOST}); deleting it still works.
 */
export const SANDBOX_STATES = ['creating', 'running', 'failed', 'deleted', 'lost'] as const;

/** The failure code of a `lost` sandbox. */
export const POD_LOST = 'pod_lost';
/** A sandbox state. */
export type SandboxState = (typeof SANDBOX_STATES)[number];

/** The pod a sandbox has, as far as it is known: all null before the pod is recorded. */
export interface SandboxPodState {
  name: string | null;
  uid: string | null;
  /** The pod's IP (the API's `pod.ip`); null until the sandbox runs, and after a delete. */
  ip: string | null;
}

/** Why a sandbox is `failed`: an operation error code (or `unavailable`) and a message. */
export interface SandboxFailure {
  code: string;
  message: string;
}

/**
 * Names one execution: a sandbox's generation and activation attempt. Every store write made
 * for an execution is fenced by it (docs/architecture.md, "Consistency between Temporal and
 * the store").
 */
export interface ExecutionRef {
  sandboxId: string;
  generation: number;
  attempt: number;
}

/** Page size of the list routes: the default and the maximum (both the API and the store). */
export const PAGE_SIZE = { default: 50, max: 200 } as const;
