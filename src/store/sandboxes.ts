/**
 * Sandbox rows: insert, read, list, and the state changes of docs/api.md, and
 * docs/architecture.md, "Consistency between Temporal and the store".
 * Writes made for an execution are fenced (fencing.ts) and report whether they wrote.
 */
import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { DialectName } from './database.js';
import { isCurrentExecution } from './fencing.js';
import { insertLabelRows, labelsColumn, labelsOfColumn, requirementCondition } from './labels.js';
import { decodePageToken, encodePageToken, filterDigest } from './page-token.js';
import type { Database, SandboxesTable } from './schema.js';
import {
  MILLICORES_PER_CORE,
  PAGE_SIZE,
  coresOf,
  formatRequirement,
  millicoresOf,
  type ExecutionRef,
  type LabelRequirement,
  type SandboxState,
} from '../../contract/index.js';
import type { ListSandboxesOptions, NewSandboxInput, SandboxPage, SandboxRecord } from './types.js';

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
    labels: labelsColumn(input.labels),
  };
  await db.insertInto('sandboxes').values(row).execute();
  await insertLabelRows(
    db,
    { id: input.id, tenant: input.tenant, createdAt: now },
    input.labels ?? {},
  );
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

/** The most values an `in` read first may have: the page reads one ordered branch per value. */
const MAX_DRIVER_VALUES = 16;
/** How many label rows the count of a requirement that could be read first reads, at most. */
const DRIVER_PROBE_CAP = 1_000;

/** A filter in one canonical form, for the page token's digest; undefined: no filter. */
function canonicalFilter(options: ListSandboxesOptions): unknown {
  const states = [
    ...new Set([...(options.states ?? []), ...(options.state ? [options.state] : [])]),
  ].sort();
  const selector = (options.selector ?? []).map((requirement) =>
    // `=` and `==` select the same sandboxes: one spelling.
    formatRequirement(
      requirement.operator === '==' ? { ...requirement, operator: '=' } : requirement,
    ),
  );
  const filter = {
    list: 'sandboxes',
    ...(states.length > 0 && { states }),
    ...(options.template !== undefined && { template: options.template }),
    ...(selector.length > 0 && { selector: [...new Set(selector)].sort() }),
    ...(options.createdAfter !== undefined && { after: options.createdAfter }),
    ...(options.createdBefore !== undefined && { before: options.createdBefore }),
  };
  return Object.keys(filter).length > 1 ? filter : undefined;
}

/**
 * The requirement whose label rows a page reads first (its "driver"): an `=`, `==` or `in` with
 * at most {@link MAX_DRIVER_VALUES} values, so the index `sandbox_labels_selector` gives its
 * sandboxes newest first and a page reads about a page of rows. Of several, the one with the
 * fewest rows (each counted up to {@link DRIVER_PROBE_CAP}): the rarest label bounds the work.
 * @returns undefined when there is none (the page then reads the tenant's sandboxes in order)
 */
async function driverOf(
  db: Kysely<Database>,
  tenant: string,
  selector: readonly LabelRequirement[],
): Promise<LabelRequirement | undefined> {
  const candidates = selector.filter(
    (r) => ['=', '==', 'in'].includes(r.operator) && r.values.length <= MAX_DRIVER_VALUES,
  );
  if (candidates.length <= 1) return candidates[0];
  let best: { requirement: LabelRequirement; rows: number } | undefined;
  for (const requirement of candidates) {
    // Value by value, each in the index's order, so a count reads the index alone (a planner
    // would otherwise scan the table for a common label until it found the cap's rows).
    let rows = 0;
    for (const value of requirement.values) {
      const probe = db
        .selectFrom('sandbox_labels')
        .select(sql.lit(1).as('one'))
        .where('tenant', '=', tenant)
        .where('key', '=', requirement.key)
        .where('value', '=', value)
        .orderBy('created_at', 'desc')
        .limit(DRIVER_PROBE_CAP - rows);
      const counted = await db
        .selectFrom(probe.as('p'))
        .select((eb) => eb.fn.countAll<number | string>().as('rows'))
        .executeTakeFirstOrThrow();
      rows += Number(counted.rows);
      if (rows >= DRIVER_PROBE_CAP) break;
    }
    // Equal counts (both at the cap): the one of fewer values, whose branches read less.
    const better =
      best === undefined ||
      rows < best.rows ||
      (rows === best.rows && requirement.values.length < best.requirement.values.length);
    if (better) best = { requirement, rows };
    if (rows === 0) break;
  }
  return best?.requirement;
}

/**
 * A page of the tenant's sandboxes, newest first (created_at desc, id desc), keyset-paged, with
 * the filter of `options` (states, template, label selector, creation time: docs/api.md,
 * "Labels and filters"). With a label selector that has an `=`, `==` or `in` requirement, the
 * page reads that label's rows from the index `sandbox_labels_selector` newest first (one
 * ordered branch per value, merged), checking the rest on each; otherwise it reads the tenant's
 * sandboxes over `sandboxes_tenant_created_at`.
 * @throws RangeError when `limit` is not an integer in 1..{@link PAGE_SIZE.max}
 * @throws InvalidPageTokenError for a token this function did not issue for this filter
 */
export async function selectSandboxPage(
  db: Kysely<Database>,
  dialect: DialectName,
  tenant: string,
  options: ListSandboxesOptions,
): Promise<SandboxPage> {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_SIZE.max) {
    throw new RangeError(`limit must be an integer from 1 to ${PAGE_SIZE.max}, got ${limit}`);
  }
  const digest = filterDigest(canonicalFilter(options));
  const after =
    options.pageToken === undefined ? undefined : decodePageToken(options.pageToken, digest);
  const states = [...(options.states ?? []), ...(options.state ? [options.state] : [])];
  const selector = options.selector ?? [];
  const driver = await driverOf(db, tenant, selector);

  /** The filter's conditions on the sandbox row, and on its position (`created`, `id`). */
  const filtered = <Q>(query: Q, created: string, id: string): Q => {
    let q = query as unknown as SandboxQuery;
    if (states.length > 0) q = q.where('sandboxes.state', 'in', states);
    if (options.template !== undefined) q = q.where('sandboxes.template', '=', options.template);
    for (const requirement of selector) {
      if (requirement === driver) continue;
      q = q.where((eb) => requirementCondition(eb, requirement, dialect));
    }
    if (options.createdAfter !== undefined)
      q = q.where(sql.ref(created), '>=', options.createdAfter);
    if (options.createdBefore !== undefined)
      q = q.where(sql.ref(created), '<', options.createdBefore);
    if (after !== undefined) {
      q = q.where(
        sql<boolean>`(${sql.ref(created)}, ${sql.ref(id)}) < (${after.createdAt}, ${after.id})`,
      );
    }
    return q as unknown as Q;
  };

  let rows: Selectable<SandboxesTable>[];
  if (driver === undefined) {
    const query = db
      .selectFrom('sandboxes')
      .selectAll('sandboxes')
      .where('sandboxes.tenant', '=', tenant);
    rows = await filtered(query, 'sandboxes.created_at', 'sandboxes.id')
      .orderBy('sandboxes.created_at', 'desc')
      .orderBy('sandboxes.id', 'desc')
      .limit(limit + 1)
      .execute();
  } else {
    // One branch per value, each newest first over the index; the page is the newest of them.
    const branches = driver.values.map((value) =>
      filtered(
        db
          .selectFrom('sandbox_labels as d')
          .innerJoin('sandboxes', 'sandboxes.id', 'd.sandbox_id')
          .selectAll('sandboxes')
          .where('d.tenant', '=', tenant)
          .where('d.key', '=', driver.key)
          .where('d.value', '=', value),
        'd.created_at',
        'd.sandbox_id',
      )
        .orderBy('d.created_at', 'desc')
        .orderBy('d.sandbox_id', 'desc')
        .limit(limit + 1),
    );
    if (branches.length === 1) {
      rows = await (branches[0] as (typeof branches)[number]).execute();
    } else {
      const union = sql.join(
        branches.map((branch, i) => sql`select * from (${branch}) as ${sql.id(`b${i}`)}`),
        sql` union all `,
      );
      const merged = await sql<Selectable<SandboxesTable>>`select * from (${union}) as merged
        order by created_at desc, id desc limit ${limit + 1}`.execute(db);
      rows = merged.rows;
    }
  }
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    sandboxes: page.map(toRecord),
    ...(rows.length > limit && last
      ? { nextPageToken: encodePageToken({ createdAt: last.created_at, id: last.id }, digest) }
      : {}),
  };
}

/** A query over `sandboxes` (alone, or joined to the driver's label rows). */
type SandboxQuery = SelectQueryBuilder<Database, 'sandboxes', Selectable<SandboxesTable>>;

/**
 * Records the pod's name and uid, fenced by the execution.
 * @param now ISO-8601
 * @returns the row as the update left it (`RETURNING *`), or undefined when it wrote nothing
 */
export async function setPod(
  db: Kysely<Database>,
  ref: ExecutionRef,
  pod: { name: string; uid: string },
  now: string,
): Promise<Selectable<SandboxesTable> | undefined> {
  return db
    .updateTable('sandboxes')
    .set({ pod_name: pod.name, pod_uid: pod.uid, updated_at: now })
    .where('id', '=', ref.sandboxId)
    .where('generation', '=', ref.generation)
    .where(isCurrentExecution(ref))
    .returningAll()
    .executeTakeFirst();
}

/**
 * `creating` -> `running` with the pod's IP, fenced by the execution. The sandbox's lifetime
 * starts now: `running_at` is `now`, and `expire_time` is `now` plus `ttlMs`, if it has one
 * (docs/api.md, "Lifetimes").
 * @param now ISO-8601
 * @param ttlMs the sandbox's `ttl_ms` as the caller's transaction read it (ms; null: none)
 * @returns the row as the update left it (`RETURNING *`), or undefined when it wrote nothing
 */
export async function setRunning(
  db: Kysely<Database>,
  ref: ExecutionRef,
  podIp: string,
  now: string,
  ttlMs: number | null,
): Promise<Selectable<SandboxesTable> | undefined> {
  const expireTime = ttlMs === null ? null : new Date(Date.parse(now) + ttlMs).toISOString();
  return db
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
    .returningAll()
    .executeTakeFirst();
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
    // Rows of the release before have no labels column value: no labels.
    labels: labelsOfColumn(row.labels),
  };
}
