/**
 * Accepting a create (docs/api.md): store the sandbox (with its idempotency key) in one
 * transaction, then start the `createSandbox` workflow whose id is the operation id. Shared by
 * the asynchronous and the synchronous route; they differ only in the deadline.
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { SandboxRecord } from '../store/index.js';
import { markOperationSpan } from '../tracing/spans.js';
import type { createSandbox } from '../workflows/create-sandbox.js';
import type { OperationMemo } from '../temporal/operation-memo.js';
import { operationSearchAttributes } from '../temporal/search-attribute-keys.js';
import { createSummary } from '../temporal/workflow-summaries.js';
import { tenantPriority } from '../temporal/priority.js';
import {
  formatDuration,
  matchesWarmPool,
  newOperationId,
  newSandboxId,
  resourcesToWire,
  type CreateSandboxInput,
} from '../../contract/index.js';
import { limitsOf, placementPolicyOf, warmPoolOf } from '../config/index.js';
import type { AppDeps } from './deps.js';
import { createsStarted } from './metrics.js';
import { ApiError } from './errors.js';
import { createRateRefusal, heldLimitRefusal } from './tenant-admission.js';
import { idempotencyKeyOf, requestHash } from './idempotency.js';
import { refuseBelowRootfsFloor } from './rootfs-floors.js';
import { parseCreateRequest, type CreateRequest } from './validation.js';

/** How much longer than the create's own deadline the workflow execution timeout is (1 h). */
export const EXECUTION_TIMEOUT_MARGIN_MS = 3_600_000;

/** An accepted create: its operation (= workflow id) and sandbox. */
export interface AcceptedCreate {
  operationId: string;
  sandboxId: string;
  /** True when an earlier request with the same Idempotency-Key and body was answered. */
  replay: boolean;
}

/** What {@link acceptCreate} needs to know about the request. */
export interface CreateCommand {
  tenant: string;
  request: CreateRequest;
  idempotencyKey?: string;
  /** The create's deadline, in ms from the workflow's start. */
  deadlineMs: number;
  /** Which route accepted it; part of the idempotency hash, so a key never crosses routes. */
  route: CreateRoute;
  /**
   * How the workflow is started (default: `deps.temporal.workflow.start`). A Nexus operation's
   * start passes the SDK's `startWorkflow`, which attaches its completion callback
   * (src/nexus/sandbox-handler.ts); the rows, the idempotency and the options are the same.
   */
  startWorkflow?: CreateWorkflowStarter;
}

/**
 * The asynchronous (`/v1/sandboxes`) or synchronous (`/sync/v1/sandboxes`) create route, or the
 * Nexus `sandbox.create` operation (docs/nexus.md).
 */
export type CreateRoute = 'async' | 'sync' | 'nexus';

/**
 * Starts the `createSandbox` workflow with the options the create flow built.
 * @returns the first run id of the started workflow
 * @throws WorkflowExecutionAlreadyStartedError, or the client's error, as `workflow.start`
 */
export type CreateWorkflowStarter = (
  options: WorkflowStartOptions<typeof createSandbox>,
) => Promise<{ firstExecutionRunId: string }>;

/**
 * Starts the create workflow of a stored sandbox. `WorkflowExecutionAlreadyStartedError` counts
 * as started (a concurrent replay got there first).
 * @throws ApiError `invalid_request` when the sandbox's template left the catalog
 * @throws the client's error when Temporal refuses or cannot be reached
 */
export async function startCreateWorkflow(
  deps: Pick<AppDeps, 'temporal' | 'config' | 'store' | 'eagerWorkflowStart' | 'readiness'>,
  sandbox: Pick<
    SandboxRecord,
    'id' | 'tenant' | 'template' | 'resources' | 'generation' | 'operationId' | 'ttlMs' | 'labels'
  >,
  deadlineMs: number,
  startWorkflow: CreateWorkflowStarter = (options) =>
    deps.temporal.workflow.start<typeof createSandbox>('createSandbox', options),
): Promise<void> {
  const template = deps.config.templates[sandbox.template];
  if (!template) {
    throw new ApiError(
      'invalid_request',
      `template must be one of: ${Object.keys(deps.config.templates).join(', ')}`,
    );
  }
  // Only attributes the namespace has: Temporal refuses a start that sets a missing one, and
  // the workflow upserts only these (docs/architecture.md, "Search attributes").
  const registered = deps.readiness ? (await deps.readiness.report()).searchAttributes : undefined;
  const policy = placementPolicyOf(template);
  const pool = warmPoolOf(template);
  const warm = pool !== undefined && matchesWarmPool(sandbox.resources, pool);
  const input: CreateSandboxInput = {
    operationId: sandbox.operationId,
    sandboxId: sandbox.id,
    tenantId: sandbox.tenant,
    template: sandbox.template,
    image: template.image,
    resources: { ...sandbox.resources },
    generation: sandbox.generation,
    attempt: 1,
    deadlineMs,
    ...(registered ? { searchAttributes: registered } : {}),
    ...(policy ? { placement: policy } : {}),
    ...(warm ? { warmPool: true } : {}),
    // Repeated by the result (the Nexus create's, docs/nexus.md); absent when none.
    ...(Object.keys(sandbox.labels).length > 0 ? { labels: { ...sandbox.labels } } : {}),
    ...(sandbox.ttlMs !== null ? { ttl: formatDuration(sandbox.ttlMs) } : {}),
  };
  const memo: OperationMemo = {
    type: 'sandbox.create',
    sandboxId: sandbox.id,
    tenantId: sandbox.tenant,
    deadlineMs,
  };
  try {
    const handle = await startWorkflow({
      workflowId: sandbox.operationId,
      taskQueue: deps.config.taskQueue,
      args: [input],
      typedSearchAttributes: operationSearchAttributes(input, 'create').filter(
        ({ key }) => !registered || registered.includes(key.name),
      ),
      memo: { ...memo },
      ...createSummary(sandbox, template.image, deadlineMs),
      // A backstop only: the deadline itself is a timer inside the workflow, so compensation runs.
      workflowExecutionTimeout: deadlineMs + EXECUTION_TIMEOUT_MARGIN_MS,
      requestEagerStart: deps.eagerWorkflowStart === true,
      // The tenant's fairness key and weight (src/temporal/priority.ts); its activities inherit them.
      priority: tenantPriority(deps.config.tenantLimits, sandbox.tenant),
    });
    createsStarted().inc({ template: sandbox.template });
    await deps.store.recordOperationRunId(sandbox.operationId, handle.firstExecutionRunId);
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

/**
 * A replayed request: make sure its workflow exists (an earlier attempt may have crashed
 * between the store and the start) and start it from the stored sandbox if not. A create that
 * ran and whose execution Temporal's retention has since deleted is a replay like any other:
 * its operation row says how it went.
 * @throws ApiError `idempotency_conflict` when the first create could not be started and its
 *   sandbox was marked failed (the key cannot be reused)
 */
async function ensureReplayStarted(
  deps: AppDeps,
  command: CreateCommand,
  replay: { operationId: string; sandboxId: string },
): Promise<void> {
  try {
    await deps.temporal.workflow.getHandle(replay.operationId).describe();
    return;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  const sandbox = await deps.store.getSandbox(command.tenant, replay.sandboxId);
  if (sandbox?.state === 'creating') {
    await startOrFail(deps, sandbox, command.deadlineMs, command.startWorkflow);
    return;
  }
  const operation = await deps.store.getOperation(command.tenant, replay.operationId);
  // A workflow step wrote the run id: the create ran, and Temporal's retention deleted it since.
  if (sandbox && (operation?.runId || sandbox.failure?.code !== START_FAILED_CODE)) return;
  throw new ApiError(
    'idempotency_conflict',
    'the create first sent with this Idempotency-Key could not be started; send a new key',
    { operation_id: replay.operationId, sandbox_id: replay.sandboxId },
  );
}

/** The failure code of a sandbox whose create workflow could not be started. */
export const START_FAILED_CODE = 'unavailable';

/**
 * After a start that failed without saying whether the workflow started (a timeout, a dropped
 * connection, an unavailable frontend): asks Temporal whether it exists.
 * @returns true when the workflow exists (the start went through; the API adopts it)
 */
async function startedAfterAll(deps: AppDeps, operationId: string): Promise<boolean> {
  try {
    await deps.temporal.workflow.getHandle(operationId).describe();
    return true;
  } catch {
    // Not found, or Temporal still unreachable: treated as not started. The sandbox is then
    // marked failed and its execution retired, so a workflow that starts later is fenced out.
    return false;
  }
}

/**
 * Starts the workflow. When the start fails, a workflow that exists anyway (the start's answer
 * was lost) is adopted; otherwise the sandbox is marked failed and the API answers 503.
 */
async function startOrFail(
  deps: AppDeps,
  sandbox: SandboxRecord,
  deadlineMs: number,
  startWorkflow?: CreateWorkflowStarter,
): Promise<void> {
  try {
    await startCreateWorkflow(deps, sandbox, deadlineMs, startWorkflow);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (await startedAfterAll(deps, sandbox.operationId)) {
      deps.logger.warn(
        { err, operation_id: sandbox.operationId, sandbox_id: sandbox.id },
        'the start of the create workflow failed, but the workflow exists: adopted',
      );
      createsStarted().inc({ template: sandbox.template });
      return;
    }
    deps.logger.error(
      { err, operation_id: sandbox.operationId, sandbox_id: sandbox.id },
      'could not start the create workflow',
    );
    await deps.store.markSandboxFailed({
      sandboxId: sandbox.id,
      code: START_FAILED_CODE,
      message: 'the create workflow could not be started',
    });
    throw new ApiError('unavailable', 'the workflow service is unavailable; try again', {
      operation_id: sandbox.operationId,
      sandbox_id: sandbox.id,
    });
  }
}

/**
 * Refuses a create while the service cannot carry it out: the Temporal namespace lacks search
 * attributes, or the cluster cannot be used (src/api/readiness.ts; cached, so creates do not
 * hammer the apiserver). Temporal and the store being down are found by the create itself.
 * @throws ApiError `unavailable` (503) naming what is wrong
 */
async function requireUsable(deps: AppDeps): Promise<void> {
  if (!deps.readiness) return;
  const { checks } = await deps.readiness.report();
  const problems = [
    checks.search_attributes === 'ok' ? undefined : checks.search_attributes,
    checks.cluster === undefined || checks.cluster === 'ok' ? undefined : checks.cluster,
  ].filter((problem): problem is string => problem !== undefined);
  if (problems.length === 0) return;
  throw new ApiError('unavailable', `the service cannot create sandboxes: ${problems.join('; ')}`, {
    checks,
  });
}

/**
 * Stores the sandbox and starts its create workflow, or recognises a replay.
 * @returns the operation and sandbox ids
 * @throws ApiError `invalid_request` (400) when `disk_mib` is below the template's rootfs floor
 *   (src/api/rootfs-floors.ts; nothing is stored or started)
 * @throws ApiError `rate_limited` (429) when the tenant's create-rate bucket holds no token,
 *   `quota_exceeded` (429) when the sandbox does not fit the tenant's held limits (both in the
 *   store's create transaction, src/api/tenant-admission.ts; nothing is stored or started, no token
 *   is taken and the `Idempotency-Key` stays unclaimed)
 * @throws ApiError `idempotency_conflict` (409) when the tenant used the key with another body
 * @throws ApiError `unavailable` (503) when the service cannot create sandboxes (search
 *   attributes missing, cluster unusable), or when the workflow could not be started (the sandbox is
 *   then marked failed)
 * @throws the store's error when the database fails
 */
export async function acceptCreate(deps: AppDeps, command: CreateCommand): Promise<AcceptedCreate> {
  // The cheapest refusal first: a bucket this replica saw empty stays empty until its refill
  // time, so a flood past the rate costs no query (a create with an Idempotency-Key goes to the
  // store, which may replay it).
  if (command.idempotencyKey === undefined) {
    const known = deps.admission?.knownRateRefusal(command.tenant, Date.now());
    if (known) throw createRateRefusal(deps.config, command.tenant, known);
  }
  // A request below a known floor is refused whatever the cluster's state: its answer is known.
  await refuseBelowRootfsFloor(deps, command);
  await requireUsable(deps);
  const operationId = newOperationId();
  const sandboxId = newSandboxId();
  // The request's span names the operation; the operation keeps the trace id (null when off).
  const traceId = markOperationSpan(operationId, sandboxId);
  const limits = limitsOf(deps.config.tenantLimits, command.tenant);
  // No later than the store's own clock reading: a refusal remembered from here ends no later
  // than the bucket's true refill time.
  const askedAtMs = Date.now();
  const stored = await deps.store.createSandbox({
    id: sandboxId,
    tenant: command.tenant,
    template: command.request.template,
    resources: { ...command.request.resources },
    operationId,
    deadlineMs: command.deadlineMs,
    ttlMs: command.request.lifetime?.ttlMs,
    labels: command.request.labels,
    traceId,
    // Checked with the insert in one transaction: exact across API replicas, and one bucket of
    // the create rate for every replica and the Nexus handler.
    limits,
    createRate: { perSecond: limits.createsPerSecond, burst: limits.createBurst },
    idempotency:
      command.idempotencyKey === undefined
        ? undefined
        : {
            key: command.idempotencyKey,
            // Hashed as the API spells it, so keys stored before a rename still match.
            requestHash: requestHash(
              {
                template: command.request.template,
                resources: resourcesToWire(command.request.resources),
                // Only a lifetime the request asked for: a template's default is not its own.
                ...(command.request.lifetime?.from === 'request' && {
                  ttl: formatDuration(command.request.lifetime.ttlMs),
                }),
                // Labels are part of the body: the same key with other labels conflicts. None
                // hashes as before labels existed, so keys stored then still replay.
                ...(command.request.labels && { labels: command.request.labels }),
              },
              command.route,
            ),
          },
  });
  switch (stored.kind) {
    case 'refused':
      throw heldLimitRefusal(deps.config, command.tenant, stored.refusal);
    case 'rate_limited':
      deps.admission?.noteRateRefusal(command.tenant, stored.refusal, askedAtMs);
      throw createRateRefusal(deps.config, command.tenant, stored.refusal);
    case 'conflict':
      throw new ApiError(
        'idempotency_conflict',
        'this Idempotency-Key was already used with a different request body or route',
        { operation_id: stored.operationId },
      );
    case 'replay':
      await ensureReplayStarted(deps, command, stored);
      return { operationId: stored.operationId, sandboxId: stored.sandboxId, replay: true };
    case 'created':
      await startOrFail(deps, stored.sandbox, command.deadlineMs, command.startWorkflow);
      deps.logger.info(
        { operation_id: operationId, sandbox_id: sandboxId, tenant: command.tenant },
        'create accepted',
      );
      return { operationId, sandboxId, replay: false };
  }
}

/**
 * Accepts a create as a route received it: validates the body and the `Idempotency-Key`, and
 * gives the create the deadline of its route (`CREATE_DEADLINE_MS` for the asynchronous route,
 * `SYNC_READINESS_BUDGET_MS` for the synchronous one).
 * @throws ApiError `invalid_request` (400) for a bad body or key, and as {@link acceptCreate}
 */
export async function acceptCreateRequest(
  deps: AppDeps,
  received: { tenant: string; body: unknown; idempotencyHeader?: string; route: CreateRoute },
): Promise<AcceptedCreate> {
  return acceptCreate(deps, {
    tenant: received.tenant,
    request: parseCreateRequest(received.body, deps.config.templates),
    idempotencyKey: idempotencyKeyOf(received.idempotencyHeader),
    deadlineMs:
      received.route === 'sync' ? deps.config.syncReadinessBudgetMs : deps.config.createDeadlineMs,
    route: received.route,
  });
}
