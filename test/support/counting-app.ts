/**
 * An app over a suite's store that counts what the server did for one resource: its reads of
 * operation or sandbox `id` and the wake-ups of the long-poll waits on it. The long-poll suites
 * prove "answered without waiting" and "woken once" by these counts, not by a clock.
 */
import type { Express } from 'express';
import type { ApiStack } from './api.js';

/** What the counting app saw for its resource. */
export interface ServerCounts {
  /** Store reads of the resource (each GET reads it once, a wait again after each wake). */
  reads: number;
  /** Long-poll waits on the resource that ended because it changed. */
  wakes: number;
}

/**
 * An app over `api`'s store that counts reads and wakes of the `kind` resource `id`; every other
 * store call goes through unchanged.
 */
export function countingApp(
  api: ApiStack,
  kind: 'operation' | 'sandbox',
  id: string,
): { app: Express; seen: ServerCounts } {
  const store = api.stack.store;
  const seen: ServerCounts = { reads: 0, wakes: 0 };
  const counted =
    kind === 'operation'
      ? {
          getOperation: ((tenant, operationId) => {
            if (operationId === id) seen.reads += 1;
            return store.getOperation(tenant, operationId);
          }) satisfies typeof store.getOperation,
          waitForOperationChange: (async (operationId, timeoutMs, signal) => {
            const changed = await store.waitForOperationChange(operationId, timeoutMs, signal);
            if (changed && operationId === id) seen.wakes += 1;
            return changed;
          }) satisfies typeof store.waitForOperationChange,
        }
      : {
          getSandbox: ((tenant, sandboxId) => {
            if (sandboxId === id) seen.reads += 1;
            return store.getSandbox(tenant, sandboxId);
          }) satisfies typeof store.getSandbox,
          waitForSandboxChange: (async (sandbox, timeoutMs, signal) => {
            const changed = await store.waitForSandboxChange(sandbox, timeoutMs, signal);
            if (changed && sandbox.id === id) seen.wakes += 1;
            return changed;
          }) satisfies typeof store.waitForSandboxChange,
        };
  return { app: api.appWith({}, { store: { ...store, ...counted } }), seen };
}
