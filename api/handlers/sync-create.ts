/**
 * `POST /sync/v1/sandboxes` (docs/api.md): the same workflow
 * as the asynchronous create, with the readiness budget as its deadline, awaited in the request.
 * 201 Sandbox; a node's or the apiserver's refusal 400 `invalid_request` naming the reason; a
 * resource quota 429 `quota_exceeded` with `Retry-After`; the deadline 503 `pod_never_ready`
 * with `Retry-After`; a cluster the service cannot use 503 `unavailable`; anything else 500. `Operation-Id`
 * names the workflow.
 *
 * The answer comes the moment the operation's outcome is known, before compensation finishes:
 * the route waits for the operation row to leave `running` (pushed by the store, api/long-poll.ts).
 * The workflow's result is awaited alongside (a Temporal long-poll), for a deployment whose
 * store cannot push across processes (SQLite with a separate worker process).
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { RequestHandler } from 'express';
import { tenantOf } from '../auth.js';
import { acceptCreateRequest } from '../create-flow.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { readOperationWhenChanged } from '../long-poll.js';
import { operationErrorOf, type OperationError } from '../failures.js';
import { detailsToWire, sandboxToWire } from '../wire.js';

/** Seconds a caller should wait before retrying a create that ran out of budget. */
export const NEVER_READY_RETRY_AFTER_S = 5;

/** Seconds a caller should wait before retrying a create a resource quota refused. */
export const QUOTA_RETRY_AFTER_S = 30;

/** `Retry-After` (seconds) of the codes a caller may retry as they are. */
const RETRY_AFTER_S: Partial<Record<OperationError['code'], number>> = {
  pod_never_ready: NEVER_READY_RETRY_AFTER_S,
  quota_exceeded: QUOTA_RETRY_AFTER_S,
};

/** The HTTP answer of a failed synchronous create. */
function syncError(error: OperationError, operationId: string): ApiError {
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
    if (error) throw syncError(error, accepted.operationId);
    const sandbox = await deps.store.getSandbox(tenant, accepted.sandboxId);
    if (!sandbox) throw new Error(`sandbox ${accepted.sandboxId} vanished after its create`);
    res.status(201).location(`/v1/sandboxes/${sandbox.id}`).json(sandboxToWire(sandbox));
  };

  return { createSandboxSync };
}
