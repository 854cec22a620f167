/**
 * Sandbox routes (docs/api.md): the asynchronous create, get, list and delete.
 * The synchronous create is in handlers/sync-create.ts.
 */
import type { RequestHandler, Response } from 'express';
import { InvalidPageTokenError, type SandboxRecord } from '../../store/index.js';
import { tenantOf } from '../auth.js';
import { acceptCreateRequest } from '../create-flow.js';
import { acceptDelete } from '../delete-flow.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { SANDBOX_ID, countProblem, sandboxToWire } from '../../../contract/index.js';
import { readOperation, type Operation } from '../operation-read.js';
import { operationToWire } from '../wire.js';
import { parseExtendRequest, parseLabelUpdate, parseSandboxListQuery } from '../validation.js';
import { extendLifetime } from '../extend-flow.js';
import { entityTagOf, noneMatchFails, parseIfNoneMatch } from '../entity-tag.js';
import { MAX_WAIT_MS, parseWait } from '../long-poll.js';
import { readSandboxWhenChanged } from '../sandbox-long-poll.js';

/** Seconds a client should wait before polling a running operation again. */
export const OPERATION_RETRY_AFTER_S = 1;

/**
 * Answers an operation just accepted or cancelled: 202, `Location`, and `Retry-After` while it
 * runs.
 */
export function sendAccepted(res: Response, operation: Operation): void {
  res.status(202).location(`/v1/operations/${operation.id}`);
  if (!operation.done) res.set('Retry-After', String(OPERATION_RETRY_AFTER_S));
  res.json(operationToWire(operation));
}

/**
 * Reads an operation the API itself just started.
 * @throws Error when Temporal does not know it (a bug or a lost start -> 500)
 */
export async function operationJustStarted(
  deps: AppDeps,
  tenant: string,
  operationId: string,
): Promise<Operation> {
  const operation = await readOperation(deps, tenant, operationId);
  if (!operation) throw new Error(`operation ${operationId} was started but cannot be read`);
  return operation;
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `sandbox ${id} does not exist`, { sandbox_id: id });
}

/** Handlers of the sandbox routes. */
export function sandboxHandlers(deps: AppDeps) {
  /** `POST /v1/sandboxes`: 202 + Operation, `Location: /v1/operations/{id}`. */
  const createSandbox: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const accepted = await acceptCreateRequest(deps, {
      tenant,
      body: req.body,
      idempotencyHeader: req.get('idempotency-key'),
      route: 'async',
    });
    sendAccepted(res, await operationJustStarted(deps, tenant, accepted.operationId));
  };

  /**
   * `GET /v1/sandboxes/{id}[?wait=30s]`: the Sandbox with its `ETag` (src/api/entity-tag.ts), 404 when
   * unknown or another tenant's. With `If-None-Match`, 304 without a body while its tag is one the
   * header names (RFC 9110 §13.1.2): at once without `wait`; with `wait`, a long-poll that answers
   * 200 as soon as the sandbox is past those tags (at once when it already is), else 304 at the
   * timeout (src/api/sandbox-long-poll.ts). `wait` without `If-None-Match`, or with `*`, is a plain read. A long-poll
   * holds one of the tenant's `waits` (429 `rate_limited` past them).
   */
  const getSandbox: RequestHandler = async (req, res) => {
    const id = String(req.params.id);
    const waitMs = req.query.wait === undefined ? 0 : parseWait(req.query.wait);
    if (waitMs === undefined) {
      throw new ApiError(
        'invalid_request',
        `query.wait must be a duration such as 30s or 500ms (capped at ${MAX_WAIT_MS / 1000}s)`,
        { field: 'query.wait' },
      );
    }
    const condition = parseIfNoneMatch(req.get('if-none-match'));
    const notModified = (sandbox: SandboxRecord) =>
      condition !== undefined && noneMatchFails(condition, entityTagOf(sandboxToWire(sandbox)));
    // `*` matches every version while the sandbox exists (a deleted one is still read), so no
    // change could end the wait: it answers at once (304), holding nothing.
    const waiting = condition !== undefined && !condition.any && waitMs > 0;
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const release = waiting ? deps.admission?.holdWait(tenantOf(res)) : undefined;
    let sandbox: SandboxRecord | undefined;
    try {
      sandbox = SANDBOX_ID.test(id)
        ? await readSandboxWhenChanged(
            deps,
            tenantOf(res),
            id,
            waiting ? waitMs : 0,
            (current) => !notModified(current),
            gone.signal,
          )
        : undefined;
    } finally {
      release?.();
    }
    if (!sandbox) throw notFound(id);
    const wire = sandboxToWire(sandbox);
    res.set('ETag', entityTagOf(wire));
    if (notModified(sandbox)) {
      res.status(304).end();
      return;
    }
    res.json(wire);
  };

  /**
   * `GET /v1/sandboxes?state=&template=&label_selector=&create_time_after=&create_time_before=
   * &limit=&page_token=`: the tenant's sandboxes that match, newest first (docs/api.md, "Labels
   * and filters").
   */
  const listSandboxes: RequestHandler = async (req, res) => {
    const query = parseSandboxListQuery(req.query);
    try {
      const page = await deps.store.listSandboxes(tenantOf(res), {
        states: query.state,
        template: query.template,
        selector: query.label_selector,
        createdAfter: query.create_time_after,
        createdBefore: query.create_time_before,
        limit: query.limit,
        pageToken: query.page_token,
      });
      res.json({
        sandboxes: page.sandboxes.map(sandboxToWire),
        next_page_token: page.nextPageToken ?? null,
      });
    } catch (err) {
      if (err instanceof InvalidPageTokenError) throw new ApiError('invalid_request', err.message);
      throw err;
    }
  };

  /** `DELETE /v1/sandboxes/{id}`: 202 + the delete Operation; 409 when already deleted. */
  const deleteSandbox: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const id = String(req.params.id);
    const sandbox = SANDBOX_ID.test(id) ? await deps.store.getSandbox(tenant, id) : undefined;
    if (!sandbox) throw notFound(id);
    const operationId = await acceptDelete(deps, sandbox);
    sendAccepted(res, await operationJustStarted(deps, tenant, operationId));
  };

  /**
   * `POST /v1/sandboxes/{id}:extend` with `ttl` or `expire_time`: 200 + the Sandbox with its
   * new `expire_time`; 409 `not_running` unless it runs; 400 past its template's `max_ttl`.
   */
  const extendSandbox: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const id = String(req.params.id);
    const request = parseExtendRequest(req.body);
    const sandbox = SANDBOX_ID.test(id) ? await deps.store.getSandbox(tenant, id) : undefined;
    if (!sandbox) throw notFound(id);
    res.json(sandboxToWire(await extendLifetime(deps, sandbox, request, Date.now())));
  };

  /**
   * `PATCH /v1/sandboxes/{id}?update_mask=labels` with `{"labels": {...}}` (AIP-134): 200 + the
   * Sandbox with its new labels, in any state; the same request again changes nothing. 400 for
   * a bad label, mask or count (past MAX_LABELS), 404 for an unknown sandbox.
   */
  const updateSandbox: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const id = String(req.params.id);
    const update = parseLabelUpdate(req.body, req.query);
    const result = SANDBOX_ID.test(id)
      ? await deps.store.updateLabels(tenant, id, update)
      : ({ kind: 'not_found' } as const);
    if (result.kind === 'not_found') throw notFound(id);
    if (result.kind === 'too_many') {
      const message = countProblem(result.count);
      throw new ApiError('invalid_request', `labels ${message}`, {
        problems: [{ field: 'labels', message }],
      });
    }
    deps.logger.info(
      { sandbox_id: id, tenant, labels: Object.keys(result.sandbox.labels).length },
      'labels changed',
    );
    res.json(sandboxToWire(result.sandbox));
  };

  return { createSandbox, getSandbox, listSandboxes, deleteSandbox, extendSandbox, updateSandbox };
}
