/**
 * `POST /sync/v1/sandboxes` (docs/api.md): the same workflow
 * as the asynchronous create, with the readiness budget as its deadline, awaited in the request.
 * 201 Sandbox; a node's or the apiserver's refusal 400 `invalid_request` naming the reason; a
 * resource quota 429 `quota_exceeded` with `Retry-After`; the budget 503 `pod_never_ready`
 * (no `Retry-After`: a retry meets the same budget; the message says what to do instead); every node tried refused it (re-placement) 503 `no_node_available` with
 * `Retry-After`; a cluster the service cannot use 503 `unavailable`; anything else 500. `Operation-Id`
 * names the workflow. A tenant past its limits is answered 429 before anything is stored
 * (src/api/tenant-admission.ts); the request holds one of the tenant's `waits` until it answers.
 *
 * The answer comes the moment the operation's outcome is known, before compensation finishes:
 * the route waits for the operation row to leave `running` (pushed by the store, src/api/long-poll.ts).
 * The workflow's result is awaited alongside (a Temporal long-poll), for a deployment whose
 * store cannot push across processes (SQLite with a separate worker process).
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { Request, RequestHandler, Response } from 'express';
import { sandboxToWire } from '../../../contract/index.js';
import { tenantOf } from '../auth.js';
import { acceptCreateRequest } from '../create-flow.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { readOperationWhenChanged } from '../long-poll.js';
import { operationErrorOf, type OperationError } from '../failures.js';
import { detailsToWire } from '../wire.js';

/** Seconds a caller should wait before retrying a create a resource quota refused. */
export const QUOTA_RETRY_AFTER_S = 30;

/** Seconds a caller should wait before retrying a create no node could take. */
export const NO_NODE_RETRY_AFTER_S = 10;

/**
 * `Retry-After` (seconds) of the codes a caller may retry as they are. Not `pod_never_ready`:
 * the same request again meets the same budget (see {@link syncNeverReadyMessage}).
 */
const RETRY_AFTER_S: Partial<Record<OperationError['code'], number>> = {
  no_node_available: NO_NODE_RETRY_AFTER_S,
  quota_exceeded: QUOTA_RETRY_AFTER_S,
};

/**
 * The message of a synchronous create whose pod had no IP within SYNC_READINESS_BUDGET_MS: what
 * ran out (the route's budget, not the asynchronous CREATE_DEADLINE_MS the workflow's message
 * names), what happens to the create (it failed; compensation deletes its pod, as at any
 * deadline: src/workflows/create-sandbox.ts) and what to do instead.
 * @param error the operation's `pod_never_ready` error (details carry `podName` when a pod was made)
 * @param config the budget and the asynchronous deadline, ms
 */
export function syncNeverReadyMessage(
  error: OperationError,
  config: { syncReadinessBudgetMs: number; createDeadlineMs: number },
): string {
  const pod = error.details.podName;
  const what = typeof pod === 'string' ? `pod ${pod} had no IP` : 'the pod was not created';
  return (
    `${what} within the synchronous readiness budget of ` +
    `${humanMs(config.syncReadinessBudgetMs)} (SYNC_READINESS_BUDGET_MS): the create failed and ` +
    'its pod is deleted. For a pod that needs longer, create with POST /v1/sandboxes (deadline ' +
    `${humanMs(config.createDeadlineMs)}, CREATE_DEADLINE_MS) and follow the operation, or ` +
    'raise SYNC_READINESS_BUDGET_MS'
  );
}

/** A duration for a message: `5 s`, `30 min`. */
function humanMs(ms: number): string {
  return ms >= 120_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}

/** The HTTP answer of a failed synchronous create. */
function syncError(deps: AppDeps, failed: OperationError, operationId: string): ApiError {
  const error =
    failed.code === 'pod_never_ready'
      ? { ...failed, message: syncNeverReadyMessage(failed, deps.config) }
      : failed;
  const details = { ...detailsToWire(error.details), operation_id: operationId };
  // The status comes from the error code (contract/operation.ts OPERATION_ERRORS).
  const retryAfterS = RETRY_AFTER_S[error.code];
  const headers: Record<string, string> =
    retryAfterS === undefined ? {} : { 'Retry-After': String(retryAfterS) };
  return new ApiError(error.code, error.message, details, { headers });
}

/** Longest the route waits for the outcome in one request (the budget itself ends sooner). */
const SYNC_WAIT_MS = 24 * 3_600_000;

/** The workflow's failure once it has closed; null when it succeeded. */
async function failureOnceClosed(
  deps: AppDeps,
  operationId: string,
): Promise<OperationError | null> {
  try {
    await deps.temporal.workflow.getHandle(operationId).result();
    return null;
  } catch (err) {
    if (err instanceof WorkflowFailedError) return operationErrorOf(err);
    throw err;
  }
}

/** Handlers of the synchronous create route. */
export function syncCreateHandlers(deps: AppDeps) {
  /** `POST /sync/v1/sandboxes`. */
  const createSandboxSync: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    // Held until the answer, taken before anything is stored (src/api/tenant-admission.ts).
    const release = deps.admission?.holdWait(tenant);
    try {
      await createAndAwait(req, res, tenant);
    } finally {
      release?.();
    }
  };

  /** Accepts the create and answers with its outcome. */
  async function createAndAwait(req: Request, res: Response, tenant: string): Promise<void> {
    const accepted = await acceptCreateRequest(deps, {
      tenant,
      body: req.body,
      idempotencyHeader: req.get('idempotency-key'),
      route: 'sync',
    });
    res.set('Operation-Id', accepted.operationId);
    const decided = new AbortController();
    res.on('close', () => decided.abort());
    const handle = deps.temporal.workflow.getHandle(accepted.operationId);
    const closed = deps.temporal
      .withAbortSignal(decided.signal, () => handle.result())
      .then(() => undefined);
    closed.catch(() => undefined);
    const outcome = await Promise.race([
      readOperationWhenChanged(deps, tenant, accepted.operationId, SYNC_WAIT_MS, {
        signal: decided.signal,
        until: (operation) => operation.status !== 'running',
      }),
      closed.then(
        () => undefined,
        (err: unknown) => {
          if (err instanceof WorkflowFailedError) return operationErrorOf(err);
          throw err;
        },
      ),
    ]).finally(() => decided.abort());
    const error =
      outcome && 'status' in outcome
        ? outcome.status === 'running'
          ? await failureOnceClosed(deps, accepted.operationId)
          : outcome.error
        : outcome;
    if (error) throw syncError(deps, error, accepted.operationId);
    const sandbox = await deps.store.getSandbox(tenant, accepted.sandboxId);
    if (!sandbox) throw new Error(`sandbox ${accepted.sandboxId} vanished after its create`);
    res.status(201).location(`/v1/sandboxes/${sandbox.id}`).json(sandboxToWire(sandbox));
  }

  return { createSandboxSync };
}
