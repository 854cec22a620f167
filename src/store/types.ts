/** The store's public types: what the API, the activities and the worker code against. */
import type { SecretKeyRing } from '../webhooks/secret-box.js';
import type { WebhookStore } from './webhooks.js';
import type { FeedEventRecord, FeedQuery } from './event-feed.js';
import type { WarmPoolStore } from './warm-pools.js';
import type { RetentionStore } from './retention.js';
import type {
  CreatePath,
  DeleteCause,
  LabelSelector,
  Labels,
  ExecutionRef,
  LearnedRootfsFloor,
  OperationErrorRecord,
  OperationPhase,
  OperationStatus,
  OperationType,
  PlacementRecord,
  SandboxFailure,
  SandboxPodState,
  SandboxResources,
  SandboxState,
  CreateRate,
  CreateRateRefusal,
  HeldLimitRefusal,
  TenantLimits,
  TenantUsage,
} from '../../contract/index.js';

/** A sandbox as stored. Timestamps are ISO-8601 UTC strings. */
export interface SandboxRecord {
  /** `sbx_…` */
  id: string;
  tenant: string;
  template: string;
  resources: SandboxResources;
  state: SandboxState;
  /** Activation generation; 1 for a fresh create. */
  generation: number;
  /** `op_…`, the operation that created the sandbox. */
  operationId: string;
  /** The sandbox's pod, as far as it is known; all null before `recordPod`. */
  pod: SandboxPodState;
  /** Set when the sandbox is `failed`; null otherwise. */
  failure: SandboxFailure | null;
  createdAt: string;
  updatedAt: string;
  /** The lifetime asked for, in ms counted from running; null: none (docs/api.md, "Lifetimes"). */
  ttlMs: number | null;
  /** When it first ran (ISO-8601); null before. */
  runningAt: string | null;
  /** When it expires (ISO-8601); null: never, or not running yet. */
  expireTime: string | null;
  /** The caller's labels (docs/api.md, "Labels and filters"); {} for none. */
  labels: Record<string, string>;
}

/**
 * Where the store lives. Give exactly one; when both are given `databaseUrl` wins.
 * - `databaseUrl`: `postgres://…` or `postgresql://…` (a `pg` Pool).
 * - `sqliteFile`: a file path (its directory is created if missing) or `:memory:`.
 */
export interface StoreOptions {
  databaseUrl?: string;
  sqliteFile?: string;
  /** The clock used for created_at/updated_at/retired_at; defaults to the wall clock. For tests. */
  clock?: () => Date;
  /**
   * The keys that seal webhook signing secrets at rest (WEBHOOK_SECRET_KEYS,
   * src/webhooks/secret-box.ts); unset: secrets are stored in clear. With keys, opening the store
   * re-seals every stored secret under the first key.
   */
  webhookSecretKeys?: SecretKeyRing;
}

/**
 * A create waiting for its pod's IP (operation `running` in phase `waiting_for_ip`), with the pod
 * its sandbox row names (Store.listWaitingPods): what a readiness decider's reconcile decides.
 */
export interface WaitingPod {
  operationId: string;
  workflowId: string;
  sandboxId: string;
  podName: string;
  podUid: string;
  /** The operation's `updated_at` (ISO-8601): the page's keyset, with `operationId`. */
  updatedAt: string;
}

/** Input of {@link Store.createSandbox}. */
export interface NewSandboxInput {
  id: string;
  tenant: string;
  template: string;
  resources: SandboxResources;
  operationId: string;
  /** The request's `Idempotency-Key` and a hash of its body. */
  idempotency?: { key: string; requestHash: string };
  /** The create's deadline in ms from now; stored as the operation's `deadline_at`. */
  deadlineMs?: number;
  /** The sandbox's lifetime in ms, counted from when it runs; unset: none. */
  ttlMs?: number;
  /** The W3C trace id the create is recorded in (32 hex digits); unset when traces are off. */
  traceId?: string;
  /** The sandbox's labels, already valid (contract/labels.ts `parseLabels`); unset: none. */
  labels?: Labels;
  /**
   * The tenant's held limits: when given, the create is stored only if the tenant's active
   * sandboxes plus this one fit them, checked in the create's transaction
   * (src/store/tenant-usage.ts). Unset: no check.
   */
  limits?: Pick<TenantLimits, 'sandboxes' | 'cpu' | 'memoryMib' | 'diskMib'>;
  /**
   * The tenant's create rate: when given, the create is stored only if the tenant's token
   * bucket (contract/create-rate.ts, src/store/create-rate.ts) holds a token, taken in the create's
   * transaction before the held limits are checked. Unset: no bucket.
   */
  createRate?: CreateRate;
}

/**
 * An operation as stored (docs/architecture.md, "Consistency between Temporal and the store"),
 * with its sandbox as it is now (null when the sandbox row is gone) and its result as it was
 * when it ended. Timestamps ISO-8601 UTC.
 */
export interface OperationRecord {
  /** `op_…`, also the workflow id. */
  id: string;
  type: OperationType;
  tenant: string;
  sandboxId: string;
  status: OperationStatus;
  phase: OperationPhase;
  /** True once the phase is `finished` (compensation, if any, has run). */
  done: boolean;
  error: OperationErrorRecord | null;
  workflowId: string;
  /** The workflow run, once a workflow step wrote it; null before. */
  runId: string | null;
  deadlineAt: string | null;
  /** Why a delete was started (`requested`, `expired`); null for creates and older deletes. */
  cause: DeleteCause | null;
  /** A create's placements that nodes refused with a re-placement code, oldest first. */
  placements: PlacementRecord[];
  /** W3C trace id of the operation's trace; null when traces were off (docs/observability.md). */
  traceId: string | null;
  createdAt: string;
  updatedAt: string;
  /** When the operation finished (AIP-151 `end_time`); null while it runs. */
  endTime: string | null;
  /** Whether a cancel was asked (AIP-151 `requested_cancellation`): a cancel or a DELETE. */
  cancellationRequested: boolean;
  /** How a create got its pod: `warm` (claimed from a pool) or `cold`; null until it had one. */
  createPath: CreatePath | null;
  /** The sandbox as it is now. */
  sandbox: SandboxRecord | null;
  /**
   * What the operation produced when it ended, for one that succeeded (a create: its sandbox
   * `running` with its pod and IP; a delete: `deleted`), whatever became of the sandbox since;
   * null otherwise (src/store/operation-results.ts, also for rows written before migration 0010).
   */
  result: { sandbox: SandboxRecord } | null;
}

/** A forward move of an operation: its new phase, and (once) its outcome. */
export interface OperationTransition {
  phase: OperationPhase;
  /** The outcome; applied only while the operation is `running`. */
  status?: OperationStatus;
  error?: OperationErrorRecord | null;
  /** The workflow run making the move. */
  runId?: string;
}

/** Identifies the operation a workflow step writes for, and the run that writes. */
export interface OperationStepRef {
  operationId?: string;
  runId?: string;
}

/** A page of {@link Store.listOperations}; `nextPageToken` is absent on the last page. */
export interface OperationPage {
  operations: OperationRecord[];
  nextPageToken?: string;
}

/** Options of {@link Store.listOperations}: the filter (each part ANDed) and the page. */
export interface ListOperationsOptions {
  status?: OperationStatus;
  /** Only operations in one of these statuses (with `status`, either). */
  statuses?: OperationStatus[];
  /** Only operations of one of these types. */
  types?: OperationType[];
  /** Only the operations of this sandbox. */
  sandboxId?: string;
  /** Only operations created at or after this time (ISO-8601 UTC, as stored). */
  createdAfter?: string;
  /** Only operations created before this time (ISO-8601 UTC, as stored). */
  createdBefore?: string;
  /** Page size, an integer in 1..PAGE_SIZE.max. */
  limit: number;
  pageToken?: string;
}

/** Input of {@link Store.recordOperationOutcome}. */
export interface OperationOutcomeInput {
  operationId: string;
  runId?: string;
  status: Extract<OperationStatus, 'failed' | 'cancelled'>;
  error: OperationErrorRecord;
  /**
   * Write only while the operation's sandbox records this pod uid (the pod its create made):
   * the fence of an outcome recorded at the decision, from a pod's events, so a pod that names
   * another create's operation cannot end it (docs/security.md). Absent: no such check.
   */
  podUid?: string;
}

/**
 * Outcome of {@link Store.createSandbox}:
 * - `created`: the sandbox (state `creating`, generation 1) and its first execution were stored.
 * - `replay`: the tenant already used this key with the same request hash; nothing was stored.
 * - `conflict`: the tenant already used this key with a different request hash; nothing stored.
 * - `refused`: the create does not fit the tenant's `limits`; nothing stored (the key stays
 *   unclaimed).
 */
export type NewSandboxOutcome =
  | { kind: 'created'; sandbox: SandboxRecord }
  | { kind: 'replay'; operationId: string; sandboxId: string }
  | { kind: 'conflict'; operationId: string }
  | { kind: 'refused'; refusal: HeldLimitRefusal }
  | { kind: 'rate_limited'; refusal: CreateRateRefusal };

/** Options of {@link Store.listSandboxes}: the filter (each part ANDed) and the page. */
export interface ListSandboxesOptions {
  /** Only sandboxes in this state. */
  state?: SandboxState;
  /** Only sandboxes in one of these states (with `state`, either). */
  states?: SandboxState[];
  /** Only sandboxes of this template. */
  template?: string;
  /** Only sandboxes whose labels this selector selects (contract/labels.ts). */
  selector?: LabelSelector;
  /** Only sandboxes created at or after this time (ISO-8601 UTC, as stored). */
  createdAfter?: string;
  /** Only sandboxes created before this time (ISO-8601 UTC, as stored). */
  createdBefore?: string;
  /** Page size, an integer in 1..PAGE_SIZE.max (contract/sandbox.ts). */
  limit: number;
  /** `nextPageToken` of the previous page. Opaque. */
  pageToken?: string;
}

/** A page of {@link Store.listSandboxes}; `nextPageToken` is absent on the last page. */
export interface SandboxPage {
  sandboxes: SandboxRecord[];
  nextPageToken?: string;
}

/** Input of {@link Store.recordPod}. */
export interface RecordPodInput extends ExecutionRef, OperationStepRef {
  podName: string;
  podUid: string;
  /** How the create got this pod (written on its operation); absent: not recorded. */
  createPath?: CreatePath;
}

/** Outcome of {@link Store.markSandboxRunning}. */
export type MarkRunningResult = 'marked' | 'already_running' | 'fenced';

/**
 * Answer of {@link Store.markSandboxRunning}: its outcome and, unless fenced, the sandbox as its
 * transaction left it (running with the IP), so the caller need not read it again.
 */
export type MarkedRunning =
  { result: 'fenced' } | { result: 'marked' | 'already_running'; sandbox: SandboxRecord };

/** Input of {@link Store.markSandboxRunning}. */
export interface MarkSandboxRunningInput extends ExecutionRef, OperationStepRef {
  podIp: string;
  /**
   * The pod to record first, in the same transaction, as {@link Store.recordPod} would (a warm
   * claim's: its pod and its IP are known at once); absent: the pod was recorded before.
   */
  pod?: { name: string; uid: string; createPath?: CreatePath };
}

/** Input of {@link Store.retireExecution}. */
export interface RetireExecutionInput extends ExecutionRef, OperationStepRef {
  /** Why the execution ends, e.g. an operation error code or `deleted`; stored as retired_reason. */
  reason: string;
  /** The sandbox's failure; null with reason `deleted` marks the sandbox `deleted`. */
  failure: SandboxFailure | null;
}

/** Input of {@link Store.markSandboxFailed}. */
export interface MarkSandboxFailedInput {
  sandboxId: string;
  code: string;
  message: string;
}

/** The event feed's reads (src/store/event-feed.ts). */
export interface EventFeedStore {
  /** The tenant's kept events after `query.afterSeq`, oldest first (`GET /v1/events`). */
  list(tenant: string, query: FeedQuery): Promise<FeedEventRecord[]>;
  /**
   * Resolves true when an event of `tenant` is written (here or, on PostgreSQL, by any
   * process), false at `timeoutMs` or when `signal` aborts; listens before it returns, so an
   * event written after the call is never missed (src/store/operation-notifier.ts).
   */
  waitForEvent(tenant: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
}

/**
 * The sandbox store (docs/api.md, and docs/architecture.md, "Consistency between Temporal
 * and the store"). SQLite or PostgreSQL behind one set of queries.
 * Methods reject with the driver's error when the database fails; fenced writes never throw for
 * a stale caller, they return false.
 */
export interface Store {
  /** Webhook endpoints and delivery attempts (src/store/webhooks.ts, docs/webhooks.md). */
  readonly webhooks: WebhookStore;
  /** The event feed (src/store/event-feed.ts, docs/webhooks.md, "The event feed"). */
  readonly events: EventFeedStore;
  /** Warm pools' sizes, claims and status (src/store/warm-pools.ts). */
  readonly warmPools: WarmPoolStore;
  /** Rows that age out: bounded purges per kind (src/store/retention.ts). */
  readonly retention: RetentionStore;
  /**
   * One transaction: inserts the sandbox (state `creating`, generation 1) and its execution
   * (generation 1, attempt 1, `active`); with `idempotency` also the tenant's key. When the
   * tenant already used the key, nothing is inserted and the earlier create is returned as
   * `replay` (same request hash) or `conflict` (different hash). Safe under concurrent calls
   * with the same key: exactly one of them creates.
   * @throws the driver's unique-violation error when the sandbox id already exists
   */
  createSandbox(input: NewSandboxInput): Promise<NewSandboxOutcome>;
  /**
   * What the tenant's active sandboxes (`creating`, `running`) hold: their count, cores and MiB
   * (src/store/tenant-usage.ts).
   */
  getTenantUsage(tenant: string): Promise<TenantUsage>;
  /** The tenant's sandbox; undefined when it does not exist or belongs to another tenant. */
  getSandbox(tenant: string, id: string): Promise<SandboxRecord | undefined>;
  /** The sandbox whatever its tenant (worker side); undefined when it does not exist. */
  getSandboxById(id: string): Promise<SandboxRecord | undefined>;
  /**
   * Sets a `running` sandbox's `expire_time` (an extend, docs/api.md, "Lifetimes").
   * @param expireTime ISO-8601
   * @returns the sandbox as stored after it, or undefined when the tenant has no such running
   *   sandbox (nothing written)
   */
  setExpireTime(
    tenant: string,
    sandboxId: string,
    expireTime: string,
  ): Promise<SandboxRecord | undefined>;
  /**
   * The tenant's sandboxes that match the filter of `options`, newest first (created_at, then
   * id, descending).
   * @throws RangeError when `limit` is not an integer in 1..PAGE_SIZE.max
   * @throws InvalidPageTokenError when `pageToken` was not produced by this method for this
   *   filter
   */
  listSandboxes(tenant: string, options: ListSandboxesOptions): Promise<SandboxPage>;
  /**
   * Changes the labels of the tenant's sandbox, in any state, in one transaction: without
   * `keys`, its labels become `labels`; with `keys` (an update mask's `labels.<key>` paths),
   * each key takes its value in `labels`, or is removed when `labels` has none. Writes (and
   * moves `updated_at`) only when the labels change, so the same update twice is one change.
   * @returns `updated` with the sandbox as stored after it; `not_found` when the tenant has no
   *   such sandbox; `too_many` (nothing written) when the result would carry more than
   *   MAX_LABELS labels
   */
  updateLabels(
    tenant: string,
    sandboxId: string,
    update: { labels: Labels; keys?: readonly string[] },
  ): Promise<
    | { kind: 'updated'; sandbox: SandboxRecord }
    | { kind: 'not_found' }
    | { kind: 'too_many'; count: number }
  >;
  /**
   * Records the pod's name and uid. Fenced: writes only when the sandbox is at `generation` and
   * the execution (generation, attempt) is active with no newer one. Returns whether it wrote.
   */
  recordPod(input: RecordPodInput): Promise<boolean>;
  /**
   * Sandbox `creating` -> `running` with the pod's IP. Fenced like {@link recordPod}, and only
   * from state `creating`.
   * One transaction that reads the sandbox's row once (locked) and answers it as it leaves it;
   * with `pod`, it records the pod first (as {@link recordPod}, fenced alike, written even when
   * the mark is fenced by a recorded outcome).
   * @returns `result`: `marked` when it wrote; `already_running` when the sandbox is already
   *   running with this IP for this execution (a retried call whose first attempt committed);
   *   `fenced` when the execution is retired or superseded, the sandbox is missing or in another
   *   state, or the create's operation already says `failed` or `cancelled` (an outcome recorded
   *   at the decision stands: docs/architecture.md, "The outcome at the decision"). Unless
   *   fenced, `sandbox`: the record as the transaction left it (what the create's operation
   *   stores as its result, and what the running event is made from)
   */
  markSandboxRunning(input: MarkSandboxRunningInput): Promise<MarkedRunning>;
  /**
   * One transaction, fenced by sandbox id + generation + attempt: when that execution is active
   * and no newer one exists, marks it retired (reason, retired_at) and marks the sandbox `failed`
   * with the failure's code and message — or `deleted` when failure is null and reason is
   * `deleted`; a null failure with another reason fails the sandbox with code = reason. Otherwise
   * (already retired, missing, newer generation/attempt) writes nothing. Safe to run twice and
   * concurrently: exactly one call returns `{retired: true}`.
   */
  retireExecution(input: RetireExecutionInput): Promise<{ retired: boolean }>;
  /**
   * Marks a sandbox `failed` with code and message when no workflow runs for it (e.g. the
   * workflow could not be started); only from state `creating`. Its active executions are
   * retired in the same transaction (retired_reason = code), so a late workflow is fenced out.
   * Returns whether it wrote.
   */
  markSandboxFailed(input: MarkSandboxFailedInput): Promise<boolean>;
  /**
   * One transaction: the sandbox -> `deleted` from any other state (its pod IP cleared; the pod
   * name and uid and a recorded failure stay),
   * and every active execution retired with reason `deleted`, so no later fenced write of an
   * older execution lands. Safe to run twice.
   * @returns whether it changed the sandbox (false when missing or already deleted)
   */
  markSandboxDeleted(input: { sandboxId: string; operationId?: string }): Promise<boolean>;
  /**
   * One transaction: every `running` sandbox (any tenant) -> `lost`, with failure
   * `{code: 'pod_lost', message: reason}` (the why) and updated_at = now (the when), its pod IP
   * cleared, its active executions retired with reason `pod_lost`. For a cluster known to have
   * lost every pod (the embedded stack's simulated cluster after a restart).
   * @returns the ids of the sandboxes it marked
   */
  markRunningSandboxesLost(input: { reason: string }): Promise<string[]>;
  /**
   * Records the rootfs floor a node's refusal taught for an image (docs/architecture.md,
   * "Rootfs floors"), unless the stored floor of that image is newer evidence (a later
   * `learnedAtMs`; at equal times this write wins), or the image already ran with a disk smaller
   * than the floor (`noteImageRan`).
   * @returns whether it wrote
   */
  recordRootfsFloor(floor: LearnedRootfsFloor): Promise<boolean>;
  /**
   * Notes that a sandbox of `image` reached `running` with a `diskMib` disk (MiB): no floor above
   * the smallest such disk is learned afterwards, and a learned floor above `diskMib` is
   * forgotten (docs/configuration.md, "Rootfs floors that heal").
   * @returns the floor forgotten, if any
   */
  noteImageRan(ran: {
    image: string;
    diskMib: number;
    atMs: number;
  }): Promise<LearnedRootfsFloor | undefined>;
  /**
   * Claims the right to let one create through an old learned floor, to prove it again (a
   * circuit breaker's half-open state): true for at most one caller per image per `afterMs`, and
   * only when the floor read (`learnedAtMs`) is still stored and at least `afterMs` old.
   */
  claimRootfsFloorProbe(probe: {
    image: string;
    learnedAtMs: number;
    nowMs: number;
    afterMs: number;
  }): Promise<boolean>;
  /** The learned floors of these images; an image without one is absent from the result. */
  listRootfsFloors(images: readonly string[]): Promise<LearnedRootfsFloor[]>;
  /** Every learned floor, by image (the operators' list, docs/api.md "Operator routes"). */
  listAllRootfsFloors(): Promise<LearnedRootfsFloor[]>;
  /**
   * Forgets the floor learned for an image; the next decisive refusal teaches it again.
   * @returns the floor removed, or undefined when the image had none
   */
  deleteRootfsFloor(image: string): Promise<LearnedRootfsFloor | undefined>;
  /**
   * The create that claimed the tenant's `Idempotency-Key`, with its request hash; undefined
   * when the key is unused. Read-only (createSandbox claims keys).
   */
  findIdempotencyKey(
    tenant: string,
    key: string,
  ): Promise<{ requestHash: string; operationId: string; sandboxId: string } | undefined>;
  /**
   * Begins a sandbox's delete unless one is already running (one delete at a time): inserts
   * `input` as a running `sandbox.delete` operation, or, when the sandbox has a running delete
   * already, inserts nothing and names that one. One transaction under the sandbox's row lock
   * (PostgreSQL; SQLite's writes take turns), so concurrent DELETEs on any API replica, and an
   * expiry racing a DELETE, get one operation.
   * @returns the running delete's id, and whether this call inserted it
   */
  beginDelete(input: {
    id: string;
    tenant: string;
    sandboxId: string;
    cause: DeleteCause;
  }): Promise<{ operationId: string; inserted: boolean }>;
  /**
   * Moves an operation forward (phases only advance; the status leaves `running` once), e.g. a
   * delete to `finished`. Returns whether it wrote.
   */
  advanceOperation(id: string, transition: OperationTransition): Promise<boolean>;
  /**
   * Records that a cancel of operation `id` was asked (AIP-151 `requested_cancellation`): by
   * `POST /v1/operations/{id}/cancel`, or a DELETE of the sandbox it creates. The first time
   * stays; wakes the operation's long-polls.
   * @returns whether it wrote
   */
  markCancellationRequested(id: string): Promise<boolean>;
  /**
   * The moment a create's outcome is known: status failed/cancelled, the error, phase
   * `compensating` (done stays false until compensation finishes). Monotonic like
   * {@link advanceOperation}. In the same transaction the create's sandbox goes from `creating`
   * to `failed` with the outcome the operation kept (src/store/create-outcome.ts), so the two never
   * disagree. Returns whether it wrote.
   */
  recordOperationOutcome(input: OperationOutcomeInput): Promise<boolean>;
  /**
   * Records the workflow run of an operation (as the start answered it) when none is recorded
   * yet. Returns whether it wrote.
   */
  recordOperationRunId(id: string, runId: string): Promise<boolean>;
  /**
   * Appends a refused placement to a running create's operation (docs/architecture.md,
   * "Re-placement"). Idempotent: a placement whose number is already recorded is left alone,
   * so a retried step changes nothing; an operation no longer running is left alone.
   * @returns whether it wrote
   */
  recordPlacement(operationId: string, placement: PlacementRecord): Promise<boolean>;
  /** The tenant's operation with its sandbox, by primary key; undefined when there is none. */
  getOperation(tenant: string, id: string): Promise<OperationRecord | undefined>;
  /**
   * The tenant's operations, newest first, over one index.
   * @throws RangeError for a bad limit; InvalidPageTokenError for a foreign token
   */
  listOperations(tenant: string, options: ListOperationsOptions): Promise<OperationPage>;
  /**
   * Resolves true when operation `id` is written (here or, on PostgreSQL, by any process),
   * false at `timeoutMs` or when `signal` aborts (src/store/operation-notifier.ts).
   */
  waitForOperationChange(id: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Resolves true when the sandbox may have changed: its create operation was written, its
   * tenant's feed got an event, or its labels or expire_time were written (src/store/sandbox-changes.ts;
   * here or, on PostgreSQL, by any process); false at `timeoutMs` or when `signal` aborts.
   */
  waitForSandboxChange(
    sandbox: { id: string; tenant: string; operationId: string },
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean>;
  /**
   * One transaction: the sandbox -> `lost` when it is still `running` on the pod `podUid`
   * (fenced by the pod: a sandbox that moved on, or runs on another pod, is left alone), with
   * failure `{code: 'pod_lost', message: reason}` (the why) and updated_at = now (the when), its
   * pod IP cleared and its active executions retired with reason `pod_lost`.
   * @returns whether it marked the sandbox
   */
  markSandboxLost(input: { sandboxId: string; podUid: string; reason: string }): Promise<boolean>;
  /**
   * The `running` sandboxes of every tenant last updated before `updatedBefore` (ISO-8601),
   * oldest first (`updatedAt`, then id), at most `limit`; `after` (the last of the page before)
   * continues after it (for the worker's sweep, which pages through all of them).
   */
  listRunningSandboxes(input: {
    updatedBefore: string;
    limit: number;
    after?: { updatedAt: string; id: string };
  }): Promise<SandboxRecord[]>;
  /**
   * The pod uids recorded for sandboxes still `creating` (any tenant), oldest first, at most
   * `limit` (default 10,000): the pods their creates wait for. For the embedded stack at start,
   * whose cluster restarted empty: these pods are gone, though nothing deleted them.
   */
  listCreatingPodUids(limit?: number): Promise<string[]>;
  /**
   * The creates waiting for their pod's IP (operation `running`, phase `waiting_for_ip`, sandbox
   * row naming a pod), oldest first (`updatedAt`, then `operationId`), at most `limit`; `after`
   * (the last row of the page before) continues after that row (keyset paging over the index
   * `operations_status_phase_updated_at`). The readiness decider's reconcile reads them
   * (src/verdict/readiness-decider.ts); Temporal's pending activity is the wait's only record.
   *
   * With `outcomeRecorded`: instead, the creates whose outcome was recorded (operation `failed`,
   * phase `compensating`) while their sandbox, with a pod, is not deleted (`failed` with that
   * outcome, or `creating` in rows written before the outcome moved the sandbox too):
   * compensation has not retired them yet, so their wait may still be open (an outcome recorded at the decision
   * whose wait's failure never reached Temporal: docs/architecture.md, "The outcome at the
   * decision"). Short-lived rows otherwise; the reconcile decides them again.
   */
  listWaitingPods(page: {
    limit: number;
    after?: Pick<WaitingPod, 'updatedAt' | 'operationId'>;
    outcomeRecorded?: boolean;
  }): Promise<WaitingPod[]>;
  /** Resolves when the database answers a trivial query; rejects with the driver's error. */
  ping(): Promise<void>;
  /** Closes the connection (pool); the store is unusable afterwards. */
  close(): Promise<void>;
}
