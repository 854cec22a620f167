/**
 * The `sandbox` Nexus service's handler (docs/nexus.md), run by the create worker. `create` goes
 * through the API's one create path (src/api/create-flow.ts `acceptCreate`: the sandbox and operation
 * rows, the idempotency key, the start), with the Nexus SDK's `startWorkflow` as the starter so
 * the workflow carries the caller's completion callback; the operation token names the
 * `createSandbox` workflow, whose id is the operation id. The Nexus request id is the
 * idempotency key, so a start the caller's server retries is the same create. `delete` goes
 * through src/api/delete-flow.ts likewise. The tenant is never read from the input: it is the
 * operator's mapping of the caller's namespace (src/nexus/tenants.ts; docs/security.md, "Nexus
 * callers").
 */
import { ApplicationFailure } from '@temporalio/common';
import { getClient, operationInfo, startWorkflow } from '@temporalio/nexus';
import {
  generateWorkflowRunOperationToken,
  loadWorkflowRunOperationToken,
} from '@temporalio/nexus/lib/token.js';
import * as nexus from 'nexus-rpc';
import type { Logger } from 'pino';
import { acceptCreate } from '../api/create-flow.js';
import { acceptDelete } from '../api/delete-flow.js';
import type { AppDeps } from '../api/deps.js';
import { ApiError } from '../api/errors.js';
import type { OperationMemo } from '../temporal/operation-memo.js';
import { parseCreateRequest } from '../api/validation.js';
import type { Config } from '../config/index.js';
import { OPERATION_ERRORS, type OperationErrorCode } from '../../contract/index.js';
import type { Store } from '../store/index.js';
import { sandboxService, type NexusCreateInput, type NexusDeleteInput } from './service.js';
import { callerNamespaceOf, type NexusTenants } from './tenants.js';

/** Dependencies of {@link sandboxNexusHandler}. */
export interface SandboxNexusDeps {
  store: Store;
  /** The service's configuration: the template catalog, CREATE_DEADLINE_MS, the task queue. */
  config: Config;
  logger: Logger;
  /** Caller namespace → tenant (NEXUS_TENANTS). */
  tenants: NexusTenants;
}

/**
 * The API's dependencies inside a Nexus handler: the worker's client and no readiness source.
 * The tenant's create rate and held limits are the store's (src/api/tenant-admission.ts), shared
 * with every API replica; a Nexus start holds no wait.
 */
function appDeps(deps: SandboxNexusDeps): AppDeps {
  return {
    temporal: getClient(),
    store: deps.store,
    config: deps.config,
    logger: deps.logger,
  };
}

/**
 * Turns an API error into the Nexus failure the caller's workflow sees: `rate_limited` a
 * retryable RESOURCE_EXHAUSTED handler error; any other but `unavailable` a non-retryable
 * ApplicationFailure whose type is the error's code, as an operation error (`failed`), so a
 * refused request is final and not retried by the caller's server. Other errors are rethrown
 * (the Nexus task fails and the caller's server retries the start: the same request id).
 */
function asOperationError(err: unknown): never {
  // Past the tenant's create rate: the caller's server retries the start, with back-off.
  if (err instanceof ApiError && err.code === 'rate_limited') {
    throw new nexus.HandlerError('RESOURCE_EXHAUSTED', err.message, { retryableOverride: true });
  }
  if (err instanceof ApiError && err.code !== 'unavailable') {
    throw new nexus.OperationError('failed', err.message, {
      cause: ApplicationFailure.create({
        // The workflow's failure type for an operation code, so callers read one spelling.
        type:
          err.code in OPERATION_ERRORS
            ? OPERATION_ERRORS[err.code as OperationErrorCode].failureType
            : err.code,
        message: err.message,
        nonRetryable: true,
        details: err.details ? [err.details] : [],
      }),
    });
  }
  throw err;
}

/** The tenant of the calling namespace, or a non-retryable refusal naming the namespace. */
function tenantOf(ctx: nexus.StartOperationContext, deps: SandboxNexusDeps): string {
  const namespace = callerNamespaceOf(ctx);
  const tenant = namespace === undefined ? undefined : deps.tenants.get(namespace);
  if (tenant) return tenant;
  throw new nexus.HandlerError(
    'UNAUTHORIZED',
    `the calling namespace ${namespace ?? '(unknown)'} is not mapped to a tenant (NEXUS_TENANTS)`,
    { retryableOverride: false },
  );
}

/**
 * The workflow id a token names, when it is one of this namespace's workflow-run tokens.
 * @throws HandlerError BAD_REQUEST otherwise
 */
function workflowIdOf(token: string): string {
  try {
    const decoded = loadWorkflowRunOperationToken(token);
    if (decoded.ns === operationInfo().namespace) return decoded.wid;
  } catch {
    // fall through: refused below
  }
  throw new nexus.HandlerError('BAD_REQUEST', 'not an operation token of this service', {
    retryableOverride: false,
  });
}

/**
 * Cancels the create or delete behind a token. A cancel request names no caller (the Temporal
 * server sends no link and no namespace with it; docs/security.md, "Nexus callers"), so the
 * token is the capability: it names an operation id (130 random bits) handed only to the caller
 * whose start created it. The workflow must still be a `type` operation (its memo) of a tenant
 * Nexus callers act for, so a token cannot reach another kind of workflow or an API-only tenant.
 * @throws HandlerError BAD_REQUEST for a token of another namespace, NOT_FOUND otherwise
 */
async function cancelOperation(
  deps: SandboxNexusDeps,
  token: string,
  type: 'sandbox.create' | 'sandbox.delete',
): Promise<void> {
  const workflowId = workflowIdOf(token);
  const handle = getClient().workflow.getHandle(workflowId);
  const memo = await handle.describe().then(
    (description) => description.memo as Partial<OperationMemo> | undefined,
    () => undefined,
  );
  const tenants = new Set(deps.tenants.values());
  if (memo?.type !== type || !memo.tenantId || !tenants.has(memo.tenantId)) {
    throw new nexus.HandlerError('NOT_FOUND', `no ${type} operation ${workflowId}`, {
      retryableOverride: false,
    });
  }
  await handle.cancel();
}

/** Builds the `sandbox` service handler the worker registers (`nexusServices`). */
export function sandboxNexusHandler(deps: SandboxNexusDeps) {
  return nexus.serviceHandler(sandboxService, {
    create: {
      /**
       * Accepts the create as `POST /v1/sandboxes` does and answers asynchronously with a token
       * naming its workflow. A refused request (bad body, a disk below the template's learned
       * rootfs floor) fails the operation with its code (`invalid_request`, …).
       */
      async start(ctx, input: NexusCreateInput) {
        const tenant = tenantOf(ctx, deps);
        const app = appDeps(deps);
        try {
          const accepted = await acceptCreate(app, {
            tenant,
            request: parseCreateRequest(input, deps.config.templates),
            idempotencyKey: ctx.requestId,
            deadlineMs: deps.config.createDeadlineMs,
            route: 'nexus',
            startWorkflow: (options) =>
              startWorkflow(ctx, 'createSandbox', options).then((handle) => ({
                firstExecutionRunId: handle.runId ?? '',
              })),
          });
          return nexus.HandlerStartOperationResult.async(
            generateWorkflowRunOperationToken(operationInfo().namespace, accepted.operationId),
          );
        } catch (err) {
          return asOperationError(err);
        }
      },
      async cancel(_ctx, token) {
        await cancelOperation(deps, token, 'sandbox.create');
      },
    },
    delete: {
      /** Starts the delete of a sandbox of the caller's tenant, as `DELETE /v1/sandboxes/{id}`. */
      async start(ctx, input: NexusDeleteInput) {
        const tenant = tenantOf(ctx, deps);
        try {
          const sandbox = await deps.store.getSandbox(tenant, String(input?.sandbox_id));
          if (!sandbox) {
            throw new ApiError('not_found', `sandbox ${String(input?.sandbox_id)} not found`);
          }
          const operationId = await acceptDelete(appDeps(deps), sandbox, (options) =>
            startWorkflow(ctx, 'deleteSandbox', options).then((handle) => ({
              firstExecutionRunId: handle.runId ?? '',
            })),
          );
          return nexus.HandlerStartOperationResult.async(
            generateWorkflowRunOperationToken(operationInfo().namespace, operationId),
          );
        } catch (err) {
          return asOperationError(err);
        }
      },
      async cancel(_ctx, token) {
        await cancelOperation(deps, token, 'sandbox.delete');
      },
    },
  });
}
