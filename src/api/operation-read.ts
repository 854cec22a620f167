/**
 * Operations (docs/api.md, "Operations"): an operation is a workflow whose id is the operation id,
 * and a row in the store that the API and the workflow write as it moves (docs/architecture.md,
 * "Consistency between Temporal and the store"). Reads come from the store, one query by
 * primary key, so an operation stays readable after Temporal's retention deleted its
 * execution.
 *
 * When a projection write fails, the workflow step that makes it fails and Temporal retries it
 * (the workflow does not move on without it), except the early outcome (phase `compensating`),
 * which gives up after a few tries so compensation is never held back; `retireExecution` then
 * writes the outcome with `finished`. A row that still says `running` {@link RESYNC_AFTER_MS}
 * after its workflow should have written it ({@link resyncDue}: its last write, or a waiting
 * create's deadline) is re-synced on read, at most once per {@link RESYNC_AFTER_MS} per
 * process: the workflow is described, and if it has closed its status and failure (read back
 * from Temporal as below) are written to the row.
 *
 * Read back from Temporal (the re-sync, and a create whose row is lost but whose sandbox row names
 * it; never a workflow the store holds nothing of): the status comes from
 * `describe()`, the phase and tenant from the typed search attributes, the type, sandbox and
 * deadline from the memo, the error from the failure `result()` rejects with, and a succeeded
 * create's result from the pod `result()` resolves with (the sandbox as the create left it).
 */
import { WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import {
  isCreatePhase,
  OPERATION_ID,
  type CreatePath,
  type DeleteCause,
  type OperationErrorCode,
  type OperationPhase,
  type OperationStatus,
  type OperationType,
  type CreateSandboxResult,
  type PlacementRecord,
} from '../../contract/index.js';
import { sandboxAsCreated, type OperationRecord, type SandboxRecord } from '../store/index.js';
import type { OperationMemo } from '../temporal/operation-memo.js';
import { CreatePhaseKey, TenantIdKey } from '../temporal/search-attribute-keys.js';
import { createAttemptsOf } from './create-attempts.js';
import type { AppDeps } from './deps.js';
import { operationErrorOf, type OperationError } from './failures.js';

/** The operation types and the workflow type that carries each. */
export const WORKFLOW_TYPE_OF = {
  'sandbox.create': 'createSandbox',
  'sandbox.delete': 'deleteSandbox',
} as const satisfies Record<OperationType, string>;
export type { OperationType };

/**
 * How long a running operation's row may stay unwritten past the moment its workflow writes it
 * at the latest before a read re-syncs it (30 s): the row's last write for most phases, the
 * create's deadline for phase `waiting_for_ip` (a wait writes nothing until it ends, and the
 * deadline ends it).
 */
export const RESYNC_AFTER_MS = 30_000;

/**
 * Whether a read should re-sync the row with Temporal: it is still running, and its workflow
 * should have written it {@link RESYNC_AFTER_MS} ago. A waiting create (phase
 * `waiting_for_ip` with a deadline) is not overdue before its deadline: its workflow writes
 * nothing while it waits, and a notification wakes readers when it does. So the reads of a
 * waiting create come from the store alone; only a row its workflow left behind (the workflow
 * terminated, or closed while its last write failed) is described.
 * @param nowMs epoch ms
 */
export function resyncDue(
  record: Pick<OperationRecord, 'done' | 'phase' | 'updatedAt' | 'deadlineAt'>,
  nowMs: number,
): boolean {
  if (record.done) return false;
  const writesByMs =
    record.phase === 'waiting_for_ip' && record.deadlineAt
      ? Math.max(Date.parse(record.deadlineAt), Date.parse(record.updatedAt))
      : Date.parse(record.updatedAt);
  return nowMs - writesByMs > RESYNC_AFTER_MS;
}

/**
 * When each overdue operation was last described by this process (epoch ms), so one that stays
 * overdue (compensation retrying against an unreachable apiserver) costs at most one describe
 * per {@link RESYNC_AFTER_MS} however often it is read; bounded, oldest first out.
 */
const lastResyncAtMs = new Map<string, number>();
const RESYNC_MEMORY = 10_000;

function resyncAllowed(id: string, nowMs: number): boolean {
  const lastMs = lastResyncAtMs.get(id);
  if (lastMs !== undefined && nowMs - lastMs < RESYNC_AFTER_MS) return false;
  lastResyncAtMs.delete(id);
  lastResyncAtMs.set(id, nowMs);
  if (lastResyncAtMs.size > RESYNC_MEMORY) {
    lastResyncAtMs.delete(lastResyncAtMs.keys().next().value as string);
  }
  return true;
}

/**
 * An operation as read back from Temporal and the store. Timestamps are ISO-8601 UTC; the API
 * shows it as its Operation JSON (src/api/wire.ts `operationToWire`).
 */
export interface Operation {
  id: string;
  type: OperationType;
  sandboxId: string;
  status: OperationStatus;
  done: boolean;
  phase: OperationPhase;
  error: OperationError | null;
  /**
   * What the operation produced when it ended, when it succeeded (Google AIP-151: the response
   * of a done operation): a create's sandbox `running` with its pod and IP, a delete's
   * `deleted`, whatever became of the sandbox since (src/store/operation-results.ts).
   */
  result: { sandbox: SandboxRecord } | null;
  createdAt: string;
  updatedAt: string;
  /** When a create's deadline passes; null for deletes, which have none. */
  deadlineAt: string | null;
  /** When it finished (AIP-151 `end_time`); null while it runs. */
  endTime: string | null;
  /**
   * Whether a cancel was asked (AIP-151 `requested_cancellation`): `POST …/cancel`, or a DELETE
   * of the sandbox a create makes.
   */
  cancellationRequested: boolean;
  /** How a create got its pod, `warm` or `cold`; null until it had one, and for a delete. */
  createPath: CreatePath | null;
  /**
   * Why a delete was started (`requested`, `expired`: docs/api.md, "Lifetimes"); null for a
   * create. Deletes stored before lifetimes existed were all `requested`.
   */
  cause: DeleteCause | null;
  /**
   * A create's placements that nodes refused with a re-placement code, oldest first
   * (docs/architecture.md, "Re-placement"); empty when none (and when read back from Temporal).
   */
  placements: PlacementRecord[];
  /**
   * How many pods a create placed (src/api/create-attempts.ts): its refused placements, and the pod it
   * last recorded when that is not one of them. Null for a delete, and for a create read back
   * from Temporal (its row, which holds the placements, is lost).
   */
  attempts: number | null;
  /** The workflow's page in the Temporal UI; null unless TEMPORAL_UI_URL (or npm start) sets it. */
  temporalUiUrl: string | null;
  /** W3C trace id of the create's trace (docs/observability.md); null when traces were off. */
  traceId: string | null;
}

/**
 * The Temporal UI page of a workflow run: `<ui>/namespaces/<ns>/workflows/<id>/<run>/history`
 * (the UI's own route).
 */
export function temporalUiUrl(
  uiUrl: string,
  namespace: string,
  workflowId: string,
  runId: string,
): string {
  const parts = [namespace, 'workflows', workflowId, runId].map(encodeURIComponent);
  return `${uiUrl}/namespaces/${parts[0]}/${parts[1]}/${parts[2]}/${parts[3]}/history`;
}

/** Workflow status -> operation status (TERMINATED and TIMED_OUT count as failed). */
const STATUS_OF: Partial<Record<string, OperationStatus>> = {
  RUNNING: 'running',
  COMPLETED: 'succeeded',
  FAILED: 'failed',
  TERMINATED: 'failed',
  TIMED_OUT: 'failed',
  CANCELLED: 'cancelled',
};

function memoOf(description: WorkflowExecutionDescription): OperationMemo | undefined {
  const memo = description.memo as Partial<OperationMemo> | undefined;
  if (!memo || typeof memo.sandboxId !== 'string' || typeof memo.tenantId !== 'string') {
    return undefined;
  }
  if (memo.type !== 'sandbox.create' && memo.type !== 'sandbox.delete') return undefined;
  if (WORKFLOW_TYPE_OF[memo.type] !== description.type) return undefined;
  return memo as OperationMemo;
}

/**
 * Describes an operation's workflow, or undefined when it does not exist, is not an operation,
 * or belongs to another tenant (the API answers 404 for all three).
 * @throws the client's error when Temporal cannot be reached
 */
export async function describeOperation(
  deps: Pick<AppDeps, 'temporal'>,
  tenant: string,
  id: string,
): Promise<{ description: WorkflowExecutionDescription; memo: OperationMemo } | undefined> {
  if (!OPERATION_ID.test(id)) return undefined;
  let description: WorkflowExecutionDescription;
  try {
    description = await deps.temporal.workflow.getHandle(id).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  const memo = memoOf(description);
  if (!memo) return undefined;
  const owner = description.typedSearchAttributes.get(TenantIdKey) ?? memo.tenantId;
  if (owner !== tenant || memo.tenantId !== tenant) return undefined;
  return { description, memo };
}

function phaseOf(
  description: WorkflowExecutionDescription,
  memo: OperationMemo,
  done: boolean,
): OperationPhase {
  if (done) return 'finished';
  if (memo.type === 'sandbox.delete') return 'deleting';
  const phase = description.typedSearchAttributes.get(CreatePhaseKey);
  return isCreatePhase(phase) ? phase : 'creating_pod';
}

function latest(...times: Array<string | undefined>): string {
  return times
    .filter((time): time is string => time !== undefined)
    .sort()
    .at(-1) as string;
}

/**
 * Builds the operation from a described workflow. Reads the failure of a failed or
 * cancelled workflow (`handle.result()`) and the sandbox from the store.
 * @throws the client's or the store's error when either cannot be reached
 */
export async function operationOf(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config'>,
  tenant: string,
  described: { description: WorkflowExecutionDescription; memo: OperationMemo },
): Promise<Operation> {
  const { description, memo } = described;
  const status = STATUS_OF[description.status.name] ?? 'running';
  const done = status !== 'running';
  let error: OperationError | null = null;
  if (status === 'failed' || status === 'cancelled') {
    error = await deps.temporal.workflow
      .getHandle(description.workflowId, description.runId)
      .result()
      .then(
        () => ({ code: 'internal' as const, message: 'the workflow did not fail', details: {} }),
        operationErrorOf,
      );
    if (status === 'cancelled') error = { ...error, code: 'cancelled' };
  }
  const sandbox: SandboxRecord | undefined = await deps.store.getSandbox(tenant, memo.sandboxId);
  const createdAt = description.startTime.toISOString();
  let result: Operation['result'] = null;
  if (status === 'succeeded' && sandbox) {
    // A create's result is what its workflow returned (the pod and its IP), not the sandbox now.
    const pod =
      memo.type === 'sandbox.create'
        ? (
            (await deps.temporal.workflow
              .getHandle(description.workflowId, description.runId)
              .result()) as Partial<CreateSandboxResult> | undefined
          )?.pod
        : undefined;
    const endedAt = (description.closeTime ?? description.startTime).toISOString();
    result = {
      sandbox: memo.type === 'sandbox.create' ? sandboxAsCreated(sandbox, endedAt, pod) : sandbox,
    };
  }
  return {
    id: description.workflowId,
    type: memo.type,
    sandboxId: memo.sandboxId,
    status,
    done,
    phase: phaseOf(description, memo, done),
    error,
    result,
    createdAt,
    updatedAt: description.closeTime
      ? description.closeTime.toISOString()
      : latest(createdAt, sandbox?.updatedAt),
    deadlineAt:
      memo.deadlineMs === undefined
        ? null
        : new Date(description.startTime.getTime() + memo.deadlineMs).toISOString(),
    cause: causeOf(memo.type, memo.cause ?? null),
    endTime: done ? (description.closeTime ?? description.startTime).toISOString() : null,
    // Read back from Temporal: a cancel asked is recorded only in the missing row.
    cancellationRequested: status === 'cancelled',
    createPath: null,
    placements: [],
    attempts: null,
    temporalUiUrl: deps.config.temporalUiUrl
      ? temporalUiUrl(
          deps.config.temporalUiUrl,
          deps.config.temporalNamespace,
          description.workflowId,
          description.runId,
        )
      : null,
    // Read back from Temporal: the store row that held the trace id is missing.
    traceId: null,
  };
}

/** A delete's cause as stored, `requested` for one stored before causes were; null for a create. */
function causeOf(type: OperationType, stored: DeleteCause | null): DeleteCause | null {
  return type === 'sandbox.delete' ? (stored ?? 'requested') : null;
}

/**
 * The operation as the API shows it, from its store row.
 */
export function operationOfRecord(
  deps: Pick<AppDeps, 'config'>,
  record: OperationRecord,
): Operation {
  return {
    id: record.id,
    type: record.type,
    sandboxId: record.sandboxId,
    status: record.status,
    done: record.done,
    phase: record.phase,
    error: record.error && { ...record.error, code: record.error.code as OperationErrorCode },
    result: record.result,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    deadlineAt: record.deadlineAt,
    cause: causeOf(record.type, record.cause),
    // A row finished by the release before has no end_time: its last write is when it ended.
    endTime: record.done ? (record.endTime ?? record.updatedAt) : null,
    cancellationRequested: record.cancellationRequested,
    createPath: record.createPath,
    placements: record.placements,
    attempts: createAttemptsOf(record),
    temporalUiUrl:
      deps.config.temporalUiUrl && record.runId
        ? temporalUiUrl(
            deps.config.temporalUiUrl,
            deps.config.temporalNamespace,
            record.workflowId,
            record.runId,
          )
        : null,
    traceId: record.traceId,
  };
}

/**
 * Re-syncs a row that has said `running` for longer than {@link RESYNC_AFTER_MS} with
 * Temporal: when the workflow has closed, its outcome is written to the row (monotonic, so a
 * concurrent workflow write is never undone).
 * @returns the row after the re-sync
 */
async function resync(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config'>,
  tenant: string,
  record: OperationRecord,
): Promise<OperationRecord> {
  const described = await describeOperation(deps, tenant, record.id);
  if (!described || described.description.status.name === 'RUNNING') return record;
  const fromTemporal = await operationOf(deps, tenant, described);
  await deps.store.advanceOperation(record.id, {
    phase: 'finished',
    status: fromTemporal.status,
    error: fromTemporal.error,
    runId: described.description.runId,
  });
  return (await deps.store.getOperation(tenant, record.id)) ?? record;
}

/**
 * Whether the store holds the operation a workflow's memo claims for the tenant, although its
 * row is missing: only a create whose sandbox row (the tenant's) names it as its create. A
 * workflow's memo and search attributes are whatever its starter wrote, and anyone who reaches
 * the Temporal frontend can start one (docs/security.md, "What the worker trusts"); so a
 * workflow the store knows nothing of is never shown, whatever tenant its memo names.
 */
async function storeHolds(
  deps: Pick<AppDeps, 'store'>,
  tenant: string,
  id: string,
  memo: OperationMemo,
): Promise<boolean> {
  if (memo.type !== 'sandbox.create') return false;
  const sandbox = await deps.store.getSandbox(tenant, memo.sandboxId);
  return sandbox?.operationId === id;
}

/**
 * The tenant's operation, or undefined when it does not exist or is someone else's. Read from
 * the store (one query); a create without a row whose sandbox row names it (its row lost) is
 * read back from Temporal. A workflow the store holds nothing of is undefined, whatever its
 * memo says ({@link storeHolds}).
 * @throws the client's or the store's error when either cannot be reached
 */
export async function readOperation(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config'>,
  tenant: string,
  id: string,
): Promise<Operation | undefined> {
  if (!OPERATION_ID.test(id)) return undefined;
  let record = await deps.store.getOperation(tenant, id);
  if (!record) {
    const described = await describeOperation(deps, tenant, id);
    if (!described || !(await storeHolds(deps, tenant, id, described.memo))) return undefined;
    return operationOf(deps, tenant, described);
  }
  const nowMs = Date.now();
  if (resyncDue(record, nowMs) && resyncAllowed(record.id, nowMs)) {
    record = await resync(deps, tenant, record);
  }
  return operationOfRecord(deps, record);
}
