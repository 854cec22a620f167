/**
 * Operation rows (docs/architecture.md, "Consistency between Temporal and the store"): the
 * projection of each operation's workflow, read by the API with one indexed query.
 *
 * Writes are monotonic, which is how operation rows are fenced: a phase moves only forward
 * (`creating_pod` -> `waiting_for_ip` -> `compensating` -> `finished`; `deleting` ->
 * `finished`), and a status leaves `running` once. A retried or late write of an earlier step
 * therefore changes nothing, and running any write twice is safe. Writes made for an execution
 * run in the same transaction as that execution's fenced sandbox write (sandbox-outcomes.ts).
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import { decodePageToken, encodePageToken, filterDigest } from './page-token.js';
import type { Database, OperationsTable, SandboxesTable } from './schema.js';
import { operationResult, resultColumn } from './operation-results.js';
import { reusableQuery } from './reusable-query.js';
import { toRecord } from './sandboxes.js';
import {
  PAGE_SIZE,
  type CreatePath,
  type DeleteCause,
  type OperationErrorRecord,
  type OperationPhase,
  type OperationStatus,
  type OperationType,
  type PlacementRecord,
} from '../../contract/index.js';
import type {
  ListOperationsOptions,
  OperationPage,
  OperationRecord,
  OperationTransition,
} from './types.js';

/** The phases an operation may be in before it moves to the key's phase. */
const EARLIER_PHASES: Record<OperationPhase, OperationPhase[]> = {
  creating_pod: [],
  deleting: [],
  waiting_for_ip: ['creating_pod'],
  compensating: ['creating_pod', 'waiting_for_ip'],
  finished: ['creating_pod', 'waiting_for_ip', 'compensating', 'deleting'],
};

/**
 * Inserts a running operation.
 * @param now ISO-8601, both created_at and updated_at
 */
export async function insertOperation(
  db: Kysely<Database>,
  input: {
    id: string;
    type: OperationType;
    tenant: string;
    sandboxId: string;
    phase: OperationPhase;
    deadlineAt: string | null;
    traceId?: string;
    /** A delete's cause; unset for a create. */
    cause?: DeleteCause;
  },
  now: string,
): Promise<void> {
  await db
    .insertInto('operations')
    .values({
      id: input.id,
      type: input.type,
      tenant: input.tenant,
      sandbox_id: input.sandboxId,
      status: 'running',
      phase: input.phase,
      error_code: null,
      error_message: null,
      error_details: null,
      workflow_id: input.id,
      run_id: null,
      deadline_at: input.deadlineAt,
      placements: null,
      trace_id: input.traceId ?? null,
      result_sandbox: null,
      cause: input.cause ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

/**
 * Moves the operation forward: to `transition.phase` when it is still in an earlier phase;
 * sets `status` and `error` (and, with them, `result`: the sandbox row the operation produced,
 * src/store/operation-results.ts) only while the status is `running` (the first outcome wins); sets
 * the run id when given.
 * @param now ISO-8601
 * @returns whether it wrote (false for a missing operation or a phase already reached)
 */
export async function advanceOperation(
  db: Kysely<Database>,
  id: string,
  transition: OperationTransition,
  now: string,
  produced?: Selectable<SandboxesTable>,
): Promise<boolean> {
  const earlier = EARLIER_PHASES[transition.phase];
  if (earlier.length === 0) return false;
  const { status, error, runId } = transition;
  const whileRunning = <T>(value: T, column: keyof OperationsTable) =>
    sql<T>`case when status = 'running' then ${value} else ${sql.ref(column)} end`;
  const result = await db
    .updateTable('operations')
    .set({
      phase: transition.phase,
      updated_at: now,
      ...(transition.phase === 'finished' ? { end_time: now } : {}),
      ...(runId ? { run_id: runId } : {}),
      ...(status
        ? {
            error_code: whileRunning(error?.code ?? null, 'error_code'),
            error_message: whileRunning(error?.message ?? null, 'error_message'),
            error_details: whileRunning(
              error ? JSON.stringify(error.details) : null,
              'error_details',
            ),
            ...(produced
              ? { result_sandbox: whileRunning(resultColumn(produced), 'result_sandbox') }
              : {}),
            // Last: SQL evaluates every SET expression against the row before the update.
            status: whileRunning(status, 'status'),
          }
        : {}),
    })
    .where('id', '=', id)
    .where('phase', 'in', earlier)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Whether the operation `id` already holds an outcome other than success (status `failed` or
 * `cancelled`), read in `db` (the caller's transaction).
 */
export async function outcomeRecorded(db: Kysely<Database>, id: string): Promise<boolean> {
  const row = await db
    .selectFrom('operations')
    .select('status')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.status === 'failed' || row?.status === 'cancelled';
}

/** The placements column: a JSON array, or null (none); anything unreadable reads as none. */
function parsePlacements(raw: string | null): PlacementRecord[] {
  if (raw === null) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? (parsed as PlacementRecord[]) : [];
  } catch {
    return [];
  }
}

/**
 * Appends a refused placement to a running operation, unless its number is already recorded.
 * Read and written in `db` (the caller's transaction), so two writers cannot interleave.
 * @param now ISO-8601
 * @returns whether it wrote
 */
export async function appendPlacement(
  db: Kysely<Database>,
  id: string,
  placement: PlacementRecord,
  now: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('operations')
    .select(['placements', 'status'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row || row.status !== 'running') return false;
  const placements = parsePlacements(row.placements);
  if (placements.some((known) => known.placement === placement.placement)) return false;
  const result = await db
    .updateTable('operations')
    .set({ placements: JSON.stringify([...placements, placement]), updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Sandbox columns joined onto an operation row, prefixed so they never clash with its own. */
const SANDBOX_COLUMNS = [
  'id',
  'tenant',
  'template',
  'cpu',
  'cpu_millicores',
  'memory_mib',
  'disk_mib',
  'state',
  'generation',
  'operation_id',
  'pod_name',
  'pod_uid',
  'pod_ip',
  'failure_code',
  'failure_message',
  'created_at',
  'updated_at',
  'ttl_ms',
  'running_at',
  'expire_time',
  'labels',
] as const satisfies ReadonlyArray<keyof SandboxesTable>;

function operationsWithSandbox(db: Kysely<Database>) {
  return db
    .selectFrom('operations')
    .leftJoin('sandboxes', 'sandboxes.id', 'operations.sandbox_id')
    .selectAll('operations')
    .select(SANDBOX_COLUMNS.map((column) => `sandboxes.${column} as sandbox_${column}` as const));
}

type JoinedRow = Selectable<OperationsTable> & {
  [K in (typeof SANDBOX_COLUMNS)[number] as `sandbox_${K}`]: SandboxesTable[K] | null;
};

function toOperationRecord(row: JoinedRow): OperationRecord {
  let error: OperationErrorRecord | null = null;
  if (row.error_code !== null) {
    let details: Record<string, unknown> = {};
    try {
      details = JSON.parse(row.error_details ?? '{}') as Record<string, unknown>;
    } catch {
      details = {};
    }
    error = { code: row.error_code, message: row.error_message ?? '', details };
  }
  const sandboxRow = Object.fromEntries(
    SANDBOX_COLUMNS.map((column) => [column, row[`sandbox_${column}`]]),
  ) as unknown as Selectable<SandboxesTable>;
  const sandbox = row.sandbox_id !== null && sandboxRow.id !== null ? toRecord(sandboxRow) : null;
  return {
    id: row.id,
    type: row.type as OperationType,
    tenant: row.tenant,
    sandboxId: row.sandbox_id,
    status: row.status as OperationStatus,
    phase: row.phase as OperationPhase,
    done: row.phase === 'finished',
    error,
    workflowId: row.workflow_id,
    runId: row.run_id,
    deadlineAt: row.deadline_at,
    cause: (row.cause as DeleteCause | null) ?? null,
    placements: parsePlacements(row.placements),
    traceId: row.trace_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    endTime: row.end_time ?? null,
    cancellationRequested: (row.cancel_requested_at ?? null) !== null,
    createPath: (row.create_path as CreatePath | null | undefined) ?? null,
    sandbox,
    result: operationResult(
      {
        type: row.type as OperationType,
        status: row.status as OperationStatus,
        updatedAt: row.updated_at,
        resultSandbox: row.result_sandbox,
      },
      sandbox,
    ),
  };
}

/**
 * The operation with its sandbox, in one query by primary key (limited to `tenant` when given).
 * @returns undefined when there is none
 */
export async function selectOperation(
  db: Kysely<Database>,
  id: string,
  tenant?: string,
): Promise<OperationRecord | undefined> {
  const [row] =
    tenant === undefined
      ? await selectOperationById(db, id)
      : await selectTenantOperation(db, id, tenant);
  return row && toOperationRecord(row as JoinedRow);
}

/** The operation read, compiled once per database (src/store/reusable-query.ts): by id. */
const selectOperationById = reusableQuery((db: Kysely<Database>, id: string) =>
  operationsWithSandbox(db).where('operations.id', '=', id),
);

/** The same, by id and tenant (`GET /v1/operations/{id}`). */
const selectTenantOperation = reusableQuery((db: Kysely<Database>, id: string, tenant: string) =>
  operationsWithSandbox(db).where('operations.id', '=', id).where('operations.tenant', '=', tenant),
);

/** An operation filter in one canonical form, for the page token's digest; undefined: none. */
function canonicalFilter(options: ListOperationsOptions): unknown {
  const statuses = [
    ...new Set([...(options.statuses ?? []), ...(options.status ? [options.status] : [])]),
  ].sort();
  const types = [...new Set(options.types ?? [])].sort();
  const filter = {
    list: 'operations',
    ...(statuses.length > 0 && { statuses }),
    ...(types.length > 0 && { types }),
    ...(options.sandboxId !== undefined && { sandbox: options.sandboxId }),
    ...(options.createdAfter !== undefined && { after: options.createdAfter }),
    ...(options.createdBefore !== undefined && { before: options.createdBefore }),
  };
  return Object.keys(filter).length > 1 ? filter : undefined;
}

/**
 * A page of the tenant's operations with their sandboxes, newest first (created_at desc, id
 * desc), keyset-paged over the index `operations_tenant_created_at` (with one status,
 * `operations_tenant_status_created_at`; with a sandbox, `operations_tenant_sandbox`), with the
 * filter of `options` (statuses, types, sandbox, creation time).
 * @throws RangeError when `limit` is not an integer in 1..PAGE_SIZE.max
 * @throws InvalidPageTokenError for a token this function did not issue for this filter
 */
export async function selectOperationPage(
  db: Kysely<Database>,
  tenant: string,
  options: ListOperationsOptions,
): Promise<OperationPage> {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_SIZE.max) {
    throw new RangeError(`limit must be an integer from 1 to ${PAGE_SIZE.max}, got ${limit}`);
  }
  const digest = filterDigest(canonicalFilter(options));
  const after =
    options.pageToken === undefined ? undefined : decodePageToken(options.pageToken, digest);
  const statuses = [...(options.statuses ?? []), ...(options.status ? [options.status] : [])];
  let query = operationsWithSandbox(db).where('operations.tenant', '=', tenant);
  if (statuses.length > 0) query = query.where('operations.status', 'in', statuses);
  if (options.types?.length) query = query.where('operations.type', 'in', options.types);
  if (options.sandboxId !== undefined) {
    query = query.where('operations.sandbox_id', '=', options.sandboxId);
  }
  if (options.createdAfter !== undefined) {
    query = query.where('operations.created_at', '>=', options.createdAfter);
  }
  if (options.createdBefore !== undefined) {
    query = query.where('operations.created_at', '<', options.createdBefore);
  }
  if (after !== undefined) {
    query = query.where(
      sql<boolean>`(operations.created_at, operations.id) < (${after.createdAt}, ${after.id})`,
    );
  }
  const rows = (await query
    .orderBy('operations.created_at', 'desc')
    .orderBy('operations.id', 'desc')
    .limit(limit + 1)
    .execute()) as JoinedRow[];
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    operations: page.map(toOperationRecord),
    ...(rows.length > limit && last
      ? { nextPageToken: encodePageToken({ createdAt: last.created_at, id: last.id }, digest) }
      : {}),
  };
}

/**
 * Records that a cancel of the operation was asked (AIP-151 `requested_cancellation`), once:
 * the first time stays.
 * @returns whether it wrote (false: unknown, or already recorded)
 */
export async function markCancellationRequested(
  db: Kysely<Database>,
  id: string,
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('operations')
    .set({ cancel_requested_at: now })
    .where('id', '=', id)
    .where('cancel_requested_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Records how a create got its pod (the last pod recorded for it wins). */
export async function setCreatePath(
  db: Kysely<Database>,
  id: string,
  path: CreatePath,
): Promise<void> {
  await db.updateTable('operations').set({ create_path: path }).where('id', '=', id).execute();
}
