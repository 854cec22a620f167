/**
 * Store steps of the create and the delete: mark the sandbox running, retire the execution,
 * read the sandbox's recorded pod.
 */
import type { PodRef } from '../kubernetes/pods.js';
import { Context, log } from '@temporalio/activity';
import type { TenantLimitsConfig } from '../config/index.js';
import {
  deletionCauseOf,
  type MarkSandboxRunningInput,
  type SandboxRecord,
  type Store,
} from '../store/index.js';
import {
  type ExecutionRef,
  type OperationErrorCode,
  type OperationErrorRecord,
  type PlacementRecord,
  type RootfsFloorEvidence,
} from '../../contract/index.js';
import type { CreateMetrics } from './metrics.js';
import { floorFields, rootfsFloorOf } from '../verdict/rootfs-floor-evidence.js';
import { emitSandboxEvent } from './webhook-delivery.js';
import { startLifetime } from '../temporal/lifetime-workflow.js';
import { tenantPriority } from '../temporal/priority.js';
import { endLifetime } from './lifetime.js';

/**
 * Answer of `recordOperationOutcome`: whether it wrote, and when it did not, the outcome the
 * operation already held (written first by the readiness decider or an earlier attempt).
 */
export interface RecordedOutcome {
  wrote: boolean;
  recorded?: { status: 'failed' | 'cancelled'; error: OperationErrorRecord };
}

/** Dependencies of the store activities. */
export interface StoreActivityDeps {
  store: Store;
  /** Create metrics (src/activities/metrics.ts); optional. */
  metrics?: CreateMetrics;
  /**
   * The worker's template catalog (what createPod runs pods from): a sandbox that runs tells
   * the store its image ran with its disk (floors that heal). Absent: nothing is noted.
   */
  templates?: Record<string, { image: string }>;
  /**
   * TENANT_LIMITS: the fairness weight of the lifetimes and webhook deliveries its steps start
   * (src/temporal/priority.ts); unset: weight 1.
   */
  tenantLimits?: TenantLimitsConfig;
}

/**
 * The execution a store step writes for (its fence), with the ids its log lines carry: the
 * operation, and the pod's uid when known.
 */
export type ExecutionStep = ExecutionRef & { operationId: string; podUid?: string };

/** The workflow run the current (local) activity works for. */
function runIdOfStep(): string | undefined {
  return Context.current().info.workflowExecution?.runId;
}

export type { RootfsFloorEvidence } from '../../contract/index.js';

/** Builds the store activities over their dependencies. */
export function storeActivities(deps: StoreActivityDeps) {
  return {
    /**
     * Marks the sandbox running with the pod IP, fenced by generation and attempt. A retry
     * whose first attempt committed finds the sandbox already running and answers true. The
     * running event and the lifetime are made from the sandbox as the store's transaction left
     * it (Store.markSandboxRunning answers it): the step reads the row no second time. With
     * `pod` (a warm claim's), the pod is recorded in the same transaction.
     * @returns false when the execution was retired or superseded meanwhile (nothing written)
     */
    async markSandboxRunning(
      input: ExecutionStep & Pick<MarkSandboxRunningInput, 'podIp' | 'pod'>,
    ): Promise<boolean> {
      const marked = await deps.store.markSandboxRunning({ ...input, runId: runIdOfStep() });
      const { result } = marked;
      if (result === 'marked')
        deps.metrics?.createsFinished.inc({ outcome: 'succeeded', code: '' });
      log.info('sandbox running', { result });
      // The transition's webhook event (docs/webhooks.md); again on a retry: its id is stable.
      if (marked.result !== 'fenced') {
        const { sandbox } = marked;
        if (result === 'marked') await noteImageRan(deps, sandbox);
        await emitSandboxEvent(deps.store, sandbox, ['running'], deps.tenantLimits);
        // Its lifetime starts now, if it has one (docs/api.md, "Lifetimes"); a retry only signals.
        if (sandbox.expireTime) {
          const context = Context.current();
          await startLifetime(
            context.client,
            context.info.taskQueue,
            sandbox,
            tenantPriority(deps.tenantLimits, sandbox.tenant),
          );
        }
      }
      return result !== 'fenced';
    },

    /**
     * Retires the execution and marks the sandbox failed with the code and message (or
     * `deleted` when `failure` is null and `reason` is `deleted`), in one fenced transaction: a
     * retired or newer execution is left alone, so running it twice is safe.
     * `refusalEventTime` (ISO-8601, the refusal event's lastTimestamp) feeds the
     * refusal-to-failure histogram. `rootfsFloor`, when the create taught one, is recorded for
     * its image first, whatever the fence says (the node's refusal is evidence either way); the
     * newest evidence wins, so a retried call changes nothing.
     * @returns whether this call retired it
     */
    async retireExecution(
      input: ExecutionStep & {
        reason: string;
        failure: { code: OperationErrorCode; message: string } | null;
        refusalEventTime?: string;
        rootfsFloor?: RootfsFloorEvidence;
      },
    ): Promise<boolean> {
      if (input.rootfsFloor)
        await recordRootfsFloor(deps.store, input.operationId, input.rootfsFloor);
      const { retired } = await deps.store.retireExecution({ ...input, runId: runIdOfStep() });
      if (retired && input.failure) {
        const outcome = input.failure.code === 'cancelled' ? 'cancelled' : 'failed';
        deps.metrics?.createsFinished.inc({ outcome, code: input.failure.code });
        const eventAtMs = input.refusalEventTime ? Date.parse(input.refusalEventTime) : NaN;
        if (Number.isFinite(eventAtMs)) {
          deps.metrics?.refusalToFailureSeconds.observe(Math.max(0, Date.now() - eventAtMs) / 1000);
        }
      }
      log.info('execution retired', { retired, reason: input.reason, code: input.failure?.code });
      const sandbox = await deps.store.getSandboxById(input.sandboxId);
      // A create's retirement deletes only on a caller's DELETE (or a pod already lost).
      const cause = sandbox ? deletionCauseOf(sandbox, 'requested') : undefined;
      await emitSandboxEvent(deps.store, sandbox, ['failed', 'deleted'], deps.tenantLimits, cause);
      return retired;
    },

    /**
     * Publishes a create's outcome the moment the workflow knows it, before compensation: the
     * operation row becomes failed/cancelled with its error, phase `compensating`, not done
     * (docs/api.md, "Operations"). Monotonic, so a retry or a late call changes nothing.
     * @param input.tenantId given by workflows from "The outcome at the decision" on
     *   (docs/architecture.md): when nothing was written, the outcome the row already holds is
     *   read back, so the workflow ends with the outcome recorded first
     * @returns whether it wrote, and (with `tenantId`, when it did not) the outcome recorded
     *   before it; workflows started before that patch ignore the answer
     */
    async recordOperationOutcome(input: {
      operationId: string;
      sandboxId: string;
      tenantId?: string;
      podUid?: string;
      status: 'failed' | 'cancelled';
      error: OperationErrorRecord;
    }): Promise<RecordedOutcome> {
      const { operationId, status, error } = input;
      const runId = runIdOfStep();
      const wrote = await deps.store.recordOperationOutcome({ operationId, status, error, runId });
      log.info('operation outcome recorded', { wrote, code: input.error.code });
      if (wrote || input.tenantId === undefined) return { wrote };
      const row = await deps.store.getOperation(input.tenantId, operationId);
      if (!row?.error || (row.status !== 'failed' && row.status !== 'cancelled')) return { wrote };
      return { wrote, recorded: { status: row.status, error: row.error } };
    },

    /**
     * Records a placement a node refused with one of the template's `replace_on` codes on the
     * operation (`details.placements`, docs/architecture.md, "Re-placement") and counts the
     * re-placement (`durable_sandbox_replacements_total{template, code}`) when it wrote, so a
     * retried step counts once.
     * @returns whether it wrote (false for a placement already recorded or an operation done)
     */
    async recordPlacement(input: {
      operationId: string;
      sandboxId: string;
      template: string;
      placement: PlacementRecord;
    }): Promise<boolean> {
      const wrote = await deps.store.recordPlacement(input.operationId, input.placement);
      if (wrote) {
        deps.metrics?.replacements.inc({ template: input.template, code: input.placement.code });
      }
      log.info('placement refused by its node', {
        wrote,
        placement: input.placement.placement,
        node_name: input.placement.nodeName,
        code: input.placement.code,
        pod_uid: input.placement.podUid,
      });
      return wrote;
    },

    /**
     * Marks the sandbox `deleted` and retires whatever execution is still active, in one
     * transaction; safe to run twice.
     * @returns whether this call changed the sandbox
     */
    async markSandboxDeleted(input: { operationId: string; sandboxId: string }): Promise<boolean> {
      const deleted = await deps.store.markSandboxDeleted({
        sandboxId: input.sandboxId,
        operationId: input.operationId,
      });
      log.info('sandbox deleted', { deleted });
      const sandbox = await deps.store.getSandboxById(input.sandboxId);
      // `data.delete_cause` (docs/webhooks.md): the delete operation's cause, or `lost`.
      const operation =
        sandbox && (await deps.store.getOperation(sandbox.tenant, input.operationId));
      const cause = sandbox ? deletionCauseOf(sandbox, operation?.cause) : undefined;
      await emitSandboxEvent(deps.store, sandbox, ['deleted'], deps.tenantLimits, cause);
      // No timer may fire on a deleted sandbox: one that had an expiry has a lifetime to end,
      // unless that lifetime started this delete (cause `expired`): it ends by itself once its
      // expiry step has started the delete (src/workflows/sandbox-lifetime.ts), so a cancel
      // would only find it closed.
      if (sandbox?.expireTime && operation?.cause !== 'expired') {
        await endLifetime(Context.current().client, input.sandboxId);
      }
      return deleted;
    },

    /**
     * The pod the store recorded for the sandbox (any tenant).
     * @returns `{name, uid}`, or null when the sandbox is unknown or no pod was recorded
     */
    async readSandboxPod(input: { sandboxId: string }): Promise<PodRef | null> {
      const sandbox = await deps.store.getSandboxById(input.sandboxId);
      const { name, uid } = sandbox?.pod ?? {};
      return name && uid ? { name, uid } : null;
    },
  };
}

/**
 * Tells the store that the sandbox's image ran with its disk (docs/configuration.md, "Rootfs
 * floors that heal"): a learned floor above that disk is forgotten, and none above it is learned
 * again. The image is the worker's catalog's for the sandbox's template, as for a learned floor.
 */
async function noteImageRan(deps: StoreActivityDeps, sandbox: SandboxRecord): Promise<void> {
  const templates = deps.templates;
  if (!templates || !Object.hasOwn(templates, sandbox.template)) return;
  const image = templates[sandbox.template]?.image;
  if (!image) return;
  const diskMib = sandbox.resources.diskMib;
  const forgotten = await deps.store.noteImageRan({ image, diskMib, atMs: Date.now() });
  if (forgotten) {
    log.info('rootfs floor forgotten: the image ran with a smaller disk', {
      image,
      template: sandbox.template,
      rootfs_floor: forgotten.rootfsMib,
      disk_mib: diskMib,
    });
  }
}

/**
 * Stores the floor a refusal taught ({@link rootfsFloorOf}); evidence out of bounds is only
 * logged.
 */
async function recordRootfsFloor(
  store: Store,
  operationId: string,
  evidence: RootfsFloorEvidence,
): Promise<void> {
  const fields = floorFields(evidence);
  const floor = rootfsFloorOf(operationId, evidence, Date.now());
  if (!floor) {
    log.warn('rootfs floor out of bounds; not learned', { ...fields, event_at: evidence.eventAt });
    return;
  }
  const recorded = await store.recordRootfsFloor(floor);
  log.info('rootfs floor learned', { ...fields, recorded });
}
