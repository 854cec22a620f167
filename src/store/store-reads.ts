/**
 * The store's methods that are one query outside a transaction: reads of sandboxes, operations,
 * usage, idempotency keys and waiting pods, the rootfs floors, and the waits for a change.
 */
import { findIdempotencyKey } from './idempotency.js';
import { selectWaitingPods } from './waiting-pods.js';
import {
  deleteRootfsFloor,
  selectAllRootfsFloors,
  selectRootfsFloors,
  upsertRootfsFloor,
  noteImageRan,
  claimRootfsFloorProbe,
} from './rootfs-floors.js';
import { sandboxWakeKeys } from './sandbox-changes.js';
import { selectOperation, selectOperationPage } from './operations.js';
import {
  selectSandbox,
  selectSandboxPage,
  selectRunningBefore,
  selectCreatingPodUids,
} from './sandboxes.js';
import { selectTenantUsage } from './tenant-usage.js';
import type { Store } from './types.js';
import type { StoreContext } from './store-context.js';

/** The single-query methods of {@link Store}, over the store's shared context. */
export function storeReads(
  ctx: StoreContext,
): Pick<
  Store,
  | 'getTenantUsage'
  | 'getSandbox'
  | 'getSandboxById'
  | 'listSandboxes'
  | 'getOperation'
  | 'listOperations'
  | 'findIdempotencyKey'
  | 'listRunningSandboxes'
  | 'listCreatingPodUids'
  | 'listWaitingPods'
> {
  const { db, dialect } = ctx;
  return {
    getTenantUsage(tenant) {
      return selectTenantUsage(db, tenant);
    },
    getSandbox(tenant, id) {
      return selectSandbox(db, id, tenant);
    },
    getSandboxById(id) {
      return selectSandbox(db, id);
    },
    listSandboxes(tenant, options) {
      return selectSandboxPage(db, dialect, tenant, options);
    },
    getOperation(tenant, id) {
      return selectOperation(db, id, tenant);
    },
    listOperations(tenant, options) {
      return selectOperationPage(db, tenant, options);
    },
    findIdempotencyKey(tenant, key) {
      return findIdempotencyKey(db, tenant, key);
    },
    listRunningSandboxes(input) {
      return selectRunningBefore(db, input);
    },
    listCreatingPodUids(limit = 10_000) {
      return selectCreatingPodUids(db, limit);
    },
    listWaitingPods(page) {
      return selectWaitingPods(db, page);
    },
  };
}

/** The waits of {@link Store} for an operation's or a sandbox's change (the notifier's). */
export function storeWaits(
  ctx: StoreContext,
): Pick<Store, 'waitForOperationChange' | 'waitForSandboxChange'> {
  const { notifier } = ctx;
  return {
    waitForOperationChange(id, timeoutMs, signal) {
      return notifier.waitForChange(id, timeoutMs, signal);
    },
    async waitForSandboxChange(sandbox, timeoutMs, signal) {
      // One listener per key, all ended once one answers.
      const done = new AbortController();
      const any = signal ? AbortSignal.any([signal, done.signal]) : done.signal;
      try {
        const keys = sandboxWakeKeys(sandbox);
        let pending = keys.length;
        return await new Promise<boolean>((resolve) => {
          for (const key of keys) {
            void notifier.waitForChange(key, timeoutMs, any).then((changed) => {
              pending -= 1;
              if (changed || pending === 0) resolve(changed);
            });
          }
        });
      } finally {
        done.abort();
      }
    },
  };
}

/** The rootfs floor methods of {@link Store} (src/store/rootfs-floors.ts), one query each. */
export function rootfsFloorQueries(
  ctx: StoreContext,
): Pick<
  Store,
  | 'recordRootfsFloor'
  | 'noteImageRan'
  | 'claimRootfsFloorProbe'
  | 'listRootfsFloors'
  | 'listAllRootfsFloors'
  | 'deleteRootfsFloor'
> {
  const { db } = ctx;
  return {
    recordRootfsFloor(floor) {
      return upsertRootfsFloor(db, floor);
    },
    noteImageRan(ran) {
      return noteImageRan(db, ran);
    },
    claimRootfsFloorProbe(probe) {
      return claimRootfsFloorProbe(db, probe);
    },
    listRootfsFloors(images) {
      return selectRootfsFloors(db, images);
    },
    listAllRootfsFloors() {
      return selectAllRootfsFloors(db);
    },
    deleteRootfsFloor(image) {
      return deleteRootfsFloor(db, image);
    },
  };
}
