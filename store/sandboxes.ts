/**
 * Sandbox rows: insert, read, list, and the state changes of docs/api.md, and
 * docs/architecture.md, "Consistency between Temporal and the store".
 * Writes made for an execution are fenced (fencing.ts) and report whether they wrote.
 */
import type { Kysely, Selectable } from 'kysely';
import { isCurrentExecution } from './fencing.js';
import { decodePageToken, encodePageToken } from './page-token.js';
import type { Database, SandboxesTable } from './schema.js';
import {
  MILLICORES_PER_CORE,
  PAGE_SIZE,
  coresOf,
  millicoresOf,
  type ExecutionRef,
  type SandboxState,
} from '../contract/index.js';
import type { NewSandboxInput, SandboxPage, SandboxRecord } from './types.js';

/**
 * Inserts a fresh sandbox: state `creating`, generation 1, no pod, no failure.
 * @param now ISO-8601, both created_at and updated_at
 * @returns the stored record
 */
export async function insertSandbox(
  db: Kysely<Database>,
  input: NewSandboxInput,
  now: string,
): Promise<SandboxRecord> {
  const row: Selectable<SandboxesTable> = {
    id: input.id,
    tenant: input.tenant,
    template: input.template,
    cpu: Math.ceil(millicoresOf(input.resources.cpu) / MILLICORES_PER_CORE),
    cpu_millicores: millicoresOf(input.resources.cpu),
    memory_mib: input.resources.memoryMib,
    disk_mib: input.resources.diskMib,
    state: 'creating',
    generation: 1,
    operation_id: input.operationId,
    pod_name: null,
    pod_uid: null,
    pod_ip: null,
    failure_code: null,
    failure_message: null,
    created_at: now,
    updated_at: now,
    ttl_ms: input.ttlMs ?? null,
    running_at: null,
    expire_time: null,
  };
  await db.insertInto('sandboxes').values(row).execute();
  return toRecord(row);
}

/** The sandbox with this id, limited to `tenant` when given; undefined when there is none. */
export async function selectSandbox(
  db: Kysely<Database>,
  id: string,
  tenant?: string,
): Promise<SandboxRecord | undefined> {
  const row = await selectSandboxRow(db, id, tenant);
  return row && toRecord(row);
}

/**
 * The sandbox's row as stored (for an operation's result), limited to `tenant` when given;
 * undefined when there is none.
 */
export async function selectSandboxRow(
  db: Kysely<Database>,
  id: string,
  tenant?: string,
): Promise<Selectable<SandboxesTable> | undefined> {
  let query = db.selectFrom('sandboxes').selectAll().where('id', '=', id);
  if (tenant !== undefined) query = query.where('tenant', '=', tenant);
  return query.executeTakeFirst();
}

/**
 * A page of the tenant's sandboxes, newest first (created_at desc, id desc), keyset-paged.
 * @throws RangeError when `limit` is not an integer in 1..{@link PAGE_SIZE.max}
 * @throws InvalidPageTokenError for a token this function did not issue
 */
export async function selectSandboxPage(
  db: Kysely<Database>,
  tenant: string,
  options: { state?: SandboxState; limit: number; pageToken?: string },
): Promise<SandboxPage> {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_SIZE.max) {
    throw new RangeError(`limit must be an integer from 1 to ${PAGE_SIZE.max}, got ${limit}`);
  }
  const after = options.pageToken === undefined ? undefined : decodePageToken(options.pageToken);
  let query = db.selectFrom('sandboxes').selectAll().where('tenant', '=', tenant);
  if (options.state !== undefined) query = query.where('state', '=', options.state);
  if (after !== undefined) {
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    sandboxes: page.map(toRecord),
    ...(rows.length > limit && last
      ? { nextPageToken: encodePageToken({ createdAt: last.created_at, id: last.id }) }
      : {}),
  };
}

/**
 * Records the pod's name and uid, fenced by the execution.
 * @param now ISO-8601
 * @returns whether it wrote
 */
export async function setPod(
  db: Kysely<Database>,
  ref: ExecutionRef,
  pod: { name: string; uid: string },
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sandboxes')
    .set({ pod_name: pod.name, pod_uid: pod.uid, updated_at: now })
    .where('id', '=', ref.sandboxId)
    .where('generation', '=', ref.generation)
    .where(isCurrentExecution(ref))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * `creating` -> `running` with the pod's IP, fenced by the execution. The sandbox's lifetime
 * starts now: `running_at` is `now`, and `expire_time` is `now` plus its `ttl_ms`, if it has one
 * (docs/api.md, "Lifetimes").
 * @param now ISO-8601
 * @returns whether it wrote
 */
export async function setRunning(
  db: Kysely<Database>,
  ref: ExecutionRef,
  podIp: string,
  now: string,
): Promise<boolean> {
  const lifetime = await db
    .selectFrom('sandboxes')
    .select('ttl_ms')
    .where('id', '=', ref.sandboxId)
    .executeTakeFirst();
  const ttlMs = lifetime?.ttl_ms == null ? null : Number(lifetime.ttl_ms);
  const expireTime = ttlMs === null ? null : new Date(Date.parse(now) + ttlMs).toISOString();
  const result = await db
    .updateTable('sandboxes')
    .set({
      state: 'running',
      pod_ip: podIp,
      updated_at: now,
      running_at: now,
      expire_time: expireTime,
    })
    .where('id', '=', ref.sandboxId)
    .where('generation', '=', ref.generation)
    .where('state', '=', 'creating')
    .where(isCurrentExecution(ref))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Whether the sandbox is already `running` with this IP for this (still current) execution:
 * what a retried `setRunning` finds when its first attempt committed.
 */
export async function isRunningAt(
  db: Kysely<Database>,
  ref: ExecutionRef,
  podIp: string,
): Promise<boolean> {
  const row = await db
    .selectFrom('sandboxes')
    .select('id')
    .where('id', '=', ref.sandboxId)
    .where('generation', '=', ref.generation)
    .where('state', '=', 'running')
    .where('pod_ip', '=', podIp)
    .where(isCurrentExecution(ref))
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Sets the outcome of a retired execution on its sandbox: `failed` with the failure, or
 * `deleted` (failure cleared). Only for the sandbox at `generation`.
 * @param now ISO-8601
 * @returns whether it wrote
 */
export async function setRetiredOutcome(
  db: Kysely<Database>,
  target: { sandboxId: string; generation: number },
  outcome:
    | { state: 'failed'; failure: { code: string; message: string } }
    | { state: 'deleted'; failure: null },
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sandboxes')
    .set({
      state: outcome.state,
      failure_code: outcome.failure?.code ?? null,
      failure_message: outcome.failure?.message ?? null,
      updated_at: now,
    })
    .where('id', '=', target.sandboxId)
    .where('generation', '=', target.generation)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * `creating` -> `failed` with code and message, whatever its executions.
 * @param now ISO-8601
 * @returns whether it wrote (false when the sandbox is missing or not `creating`)
 */
export async function setFailedWhileCreating(
  db: Kysely<Database>,
  sandboxId: string,
  failure: { code: string; message: string },
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sandboxes')
    .set({
      state: 'failed',
      failure_code: failure.code,
      failure_message: failure.message,
      updated_at: now,
    })
    .where('id', '=', sandboxId)
    .where('state', '=', 'creating')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Any state but `deleted` -> `deleted`. The pod's IP is cleared (the pod is gone); its name and
 * uid and a failure already recorded stay, as history.
 * @param now ISO-8601
 * @returns whether it wrote
 */
export async function setDeleted(
  db: Kysely<Database>,
  sandboxId: string,
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sandboxes')
    .set({ state: 'deleted', pod_ip: null, updated_at: now })
    .where('id', '=', sandboxId)
    .where('state', '!=', 'deleted')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The columns of a sandbox found `lost`: the state, its failure, its pod IP cleared. */
function lostColumns(failure: { code: string; message: string }, now: string) {
  return {
    state: 'lost',
    pod_ip: null,
    failure_code: failure.code,
    failure_message: failure.message,
    updated_at: now,
  } as const;
}

/**
 * Every `running` sandbox -> `lost` with `failure` (its pod IP cleared; pod name and uid stay).
 * @param now ISO-8601: when they were found lost (their updated_at)
 * @returns the ids it changed
 */
export async function setRunningLost(
  db: Kysely<Database>,
  failure: { code: string; message: string },
  now: string,
): Promise<string[]> {
  const rows = await db
    .updateTable('sandboxes')
    .set(lostColumns(failure, now))
    .where('state', '=', 'running')
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/**
 * The pod uids of the sandboxes (any tenant) still `creating` with a recorded pod, oldest
 * first, at most `limit`.
 */
export async function selectCreatingPodUids(
  db: Kysely<Database>,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('sandboxes')
    .select('pod_uid')
    .where('state', '=', 'creating')
    .where('pod_uid', 'is not', null)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => row.pod_uid as string);
}

/**
 * The `running` sandboxes (any tenant) last updated before `updatedBefore`, oldest first
 * (`updated_at`, then id), at most `limit`; `after` (the last row of the page before) continues
 * after that row (keyset paging).
 * @param updatedBefore ISO-8601
 */
export async function selectRunningBefore(
  db: Kysely<Database>,
  input: { updatedBefore: string; limit: number; after?: { updatedAt: string; id: string } },
): Promise<SandboxRecord[]> {
  const { after } = input;
  let query = db
    .selectFrom('sandboxes')
    .selectAll()
    .where('state', '=', 'running')
    .where('updated_at', '<', input.updatedBefore);
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('updated_at', '>', after.updatedAt),
        eb.and([eb('updated_at', '=', after.updatedAt), eb('id', '>', after.id)]),
      ]),
    );
  }
  const rows = await query.orderBy('updated_at').orderBy('id').limit(input.limit).execute();
  return rows.map(toRecord);
}

/**
 * One `running` sandbox whose pod is `podUid` -> `lost` with `failure` (its pod IP cleared).
 * @param now ISO-8601: when it was found lost (its updated_at)
 * @returns whether it changed the sandbox (false when it is no longer running on that pod)
 */
export async function setLost(
  db: Kysely<Database>,
  input: { sandboxId: string; podUid: string },
  failure: { code: string; message: string },
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sandboxes')
    .set(lostColumns(failure, now))
    .where('id', '=', input.sandboxId)
    .where('state', '=', 'running')
    .where('pod_uid', '=', input.podUid)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * A `running` sandbox's new `expire_time` (an extend, docs/api.md, "Lifetimes"), for the
 * tenant's sandbox only.
 * @param expireTime ISO-8601
 * @param now ISO-8601, its updated_at
 * @returns whether it wrote (false: no such running sandbox of the tenant)
 */
export async function setExpireTime(
  db: Kysely<Database>,
  target: { sandboxId: string; tenant: string },
  expireTime: string,
  now: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sandboxes')
    .set({ expire_time: expireTime, updated_at: now })
    .where('id', '=', target.sandboxId)
    .where('tenant', '=', target.tenant)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** A sandbox row as the store returns it. */
export function toRecord(row: Selectable<SandboxesTable>): SandboxRecord {
  return {
    id: row.id,
    tenant: row.tenant,
    template: row.template,
    resources: {
      cpu: coresOf(row.cpu_millicores ?? row.cpu * MILLICORES_PER_CORE),
      memoryMib: row.memory_mib,
      diskMib: row.disk_mib,
    },
    state: row.state as SandboxState,
    generation: row.generation,
    operationId: row.operation_id,
    pod: { name: row.pod_name, uid: row.pod_uid, ip: row.pod_ip },
    failure:
      row.failure_code === null
        ? null
        : { code: row.failure_code, message: row.failure_message ?? '' },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    // Rows of the release before, and results stored by it, carry no lifetime.
    ttlMs: row.ttl_ms == null ? null : Number(row.ttl_ms),
    runningAt: row.running_at ?? null,
    expireTime: row.expire_time ?? null,
  };
}
