/** Operation routes (docs/api.md): get, list, cancel. */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { RequestHandler } from 'express';
import { tenantOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { listOperations } from '../operation-list.js';
import { entityTagOf, noneMatchFails, parseIfNoneMatch } from '../entity-tag.js';
import { MAX_WAIT_MS, parseWait, readOperationWhenChanged } from '../long-poll.js';
import { describeOperation, readOperation, type Operation } from '../operation-read.js';
import { parseOperationListQuery } from '../validation.js';
import { operationPageToWire, operationToWire } from '../wire.js';
import { OPERATION_RETRY_AFTER_S, sendAccepted } from './sandboxes.js';

function notFound(id: string): ApiError {
  return new ApiError('not_found', `operation ${id} does not exist`, { operation_id: id });
}

/** Handlers of the operation routes. */
export function operationHandlers(deps: AppDeps) {
  /**
   * `GET /v1/operations/{id}[?wait=30s]`: the Operation with its `ETag` (src/api/entity-tag.ts);
   * `Retry-After` while it runs. With `wait`, a long-poll: answers when the operation changes, or
   * at the timeout (src/api/long-poll.ts); 429 `rate_limited` when the tenant already holds its
   * `waits` on this replica. With `If-None-Match`, 304 while the operation's tag is one it names:
   * at once without `wait`; with `wait`, the long-poll answers 200 as soon as the tag differs (at
   * once when it already does), else 304 at the timeout (RFC 9110 §13.1.2, §15.4.5).
   */
  const getOperation: RequestHandler = async (req, res) => {
    const id = String(req.params.id);
    const waitMs = req.query.wait === undefined ? 0 : parseWait(req.query.wait);
    if (waitMs === undefined) {
      throw new ApiError(
        'invalid_request',
        `query.wait must be a duration such as 30s or 500ms (capped at ${MAX_WAIT_MS / 1000}s)`,
        { field: 'query.wait' },
      );
    }
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const condition = parseIfNoneMatch(req.get('if-none-match'));
    // `*` matches every version while the operation exists, so no change could end the wait:
    // it answers at once (304), holding nothing.
    const longPollMs = condition?.any ? 0 : waitMs;
    // A long-poll holds one of the tenant's `waits` (src/api/tenant-admission.ts); a plain GET none.
    const release = longPollMs > 0 ? deps.admission?.holdWait(tenantOf(res)) : undefined;
    const notModified = (operation: Operation) =>
      condition !== undefined && noneMatchFails(condition, entityTagOf(operationToWire(operation)));
    let operation;
    try {
      operation = await readOperationWhenChanged(deps, tenantOf(res), id, longPollMs, {
        signal: gone.signal,
        // A caller that names a tag waits until the operation is past it, from the tag it saw
        // rather than this request's first read; one without keeps the next-change wait.
        until: condition && ((current) => !notModified(current)),
      });
    } finally {
      release?.();
    }
    if (!operation) throw notFound(id);
    const wire = operationToWire(operation);
    res.set('ETag', entityTagOf(wire));
    if (!operation.done) res.set('Retry-After', String(OPERATION_RETRY_AFTER_S));
    if (notModified(operation)) {
      res.status(304).end();
      return;
    }
    res.json(wire);
  };

  /** `GET /v1/operations?status=&limit=&page_token=`: the tenant's operations, newest first. */
  const listOperationsHandler: RequestHandler = async (req, res) => {
    const query = parseOperationListQuery(req.query);
    res.json(operationPageToWire(await listOperations(deps, tenantOf(res), query)));
  };

  /**
   * `POST /v1/operations/{id}/cancel`: requests cancellation of a running create (it ends
   * `cancelled` after compensation) and answers 202 with the Operation; 409 `already_done` when
   * it has finished, 409 `not_cancellable` for a delete.
   */
  /**
   * Cancels a running create. 409 `already_done` once its outcome is known, even while its
   * compensation is still running (`status` and `error` are final from the decision on, docs/api.md,
   * "Operations"); 409 `not_cancellable` for a delete; 404 for an unknown operation.
   */
  const cancelOperation: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const id = String(req.params.id);
    const current = await readOperation(deps, tenant, id);
    if (!current) throw notFound(id);
    if (current.type !== 'sandbox.create') {
      throw new ApiError(
        'not_cancellable',
        `operation ${id} is a ${current.type}; it cannot be cancelled`,
        {
          operation_id: id,
        },
      );
    }
    const alreadyDone = (operation: Operation): ApiError =>
      new ApiError(
        'already_done',
        operation.done
          ? `operation ${id} already finished as ${operation.status}`
          : `operation ${id} already ended as ${operation.status}; its compensation is finishing`,
        { operation_id: id, status: operation.status },
      );
    if (current.status !== 'running') throw alreadyDone(current);
    const described = await describeOperation(deps, tenant, id);
    if (!described || described.description.status.name !== 'RUNNING') {
      throw alreadyDone((await readOperation(deps, tenant, id)) ?? current);
    }
    // AIP-151 `requested_cancellation`: asked, whatever comes of it.
    await deps.store.markCancellationRequested(id);
    try {
      await deps.temporal.workflow.getHandle(id).cancel();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw notFound(id);
      throw err;
    }
    deps.logger.info({ operation_id: id, tenant }, 'cancellation requested');
    const operation = await readOperation(deps, tenant, id);
    if (!operation) throw notFound(id);
    // Cancelling a workflow that has just closed is accepted by Temporal and changes nothing.
    if (operation.status !== 'running' && operation.status !== 'cancelled') {
      throw alreadyDone(operation);
    }
    sendAccepted(res, operation);
  };

  return { getOperation, listOperations: listOperationsHandler, cancelOperation };
}
