/**
 * Row types of the store's tables, as kysely sees them. Every timestamp is ISO-8601 text in UTC
 * (`Date.prototype.toISOString()`, so text order is time order) and there are no booleans, so the
 * same queries run on SQLite and PostgreSQL. The DDL lives in `migrations/`.
 */

/** `sandboxes`: one row per sandbox; `generation` counts activations of the sandbox. */
export interface SandboxesTable {
  /** `sbx_…` */
  id: string;
  tenant: string;
  template: string;
  /**
   * Requested CPU in whole cores, rounded up: what the release before reads (migration 0008).
   * This release reads `cpu_millicores`.
   */
  cpu: number;
  /** Requested CPU in millicores; null on a row written by the release before (read `cpu`). */
  cpu_millicores: number | null;
  /** Requested sizes in MiB. */
  memory_mib: number;
  disk_mib: number;
  /** 'creating' | 'running' | 'failed' | 'deleted' */
  state: string;
  generation: number;
  /** `op_…`, the create operation (= its workflow id). */
  operation_id: string;
  pod_name: string | null;
  pod_uid: string | null;
  pod_ip: string | null;
  failure_code: string | null;
  failure_message: string | null;
  created_at: string;
  updated_at: string;
  /** The lifetime asked for, in ms from running (migration 0014); null: none. */
  ttl_ms: number | string | null;
  /** When the sandbox first ran (ISO-8601); null before, and on rows of the release before. */
  running_at: string | null;
  /** When the sandbox expires (ISO-8601); null: never. */
  expire_time: string | null;
  /**
   * The sandbox's labels, a JSON object (migration 0018); null: none (also every row of the
   * release before). `sandbox_labels` holds the same labels, one row each, for selectors.
   */
  labels: string | null;
}

/**
 * `sandbox_labels` (migration 0018): one row per label of a sandbox, written with
 * `sandboxes.labels` in one transaction (src/store/labels.ts). `created_at` is the sandbox's;
 * `numeric_value` the value as 19 zero-padded digits when it is an int64 (contract/labels.ts
 * `numericLabelKey`), else null.
 */
export interface SandboxLabelsTable {
  sandbox_id: string;
  tenant: string;
  key: string;
  value: string;
  numeric_value: string | null;
  created_at: string;
}

/**
 * `executions`: one row per activation attempt of a sandbox generation. At most one of a
 * sandbox's executions is `active`; fenced writes name the (generation, attempt) they act for.
 */
export interface ExecutionsTable {
  sandbox_id: string;
  generation: number;
  activation_attempt: number;
  /** 'active' | 'retired' */
  state: string;
  retired_reason: string | null;
  retired_at: string | null;
  created_at: string;
}

/** `idempotency_keys`: a tenant's `Idempotency-Key` and the create it started. */
export interface IdempotencyKeysTable {
  tenant: string;
  key: string;
  /** A hash of the request body, chosen by the caller; equal hashes mean a replay. */
  request_hash: string;
  operation_id: string;
  sandbox_id: string;
  created_at: string;
}

/**
 * `rootfs_floors`: the rootfs floor learned for an image from a node's decisive refusal; the
 * newest evidence (`learned_at`, the refusal event's time) wins.
 */
export interface RootfsFloorsTable {
  image: string;
  /** The template the refused create named. */
  template: string;
  rootfs_mib: number;
  learned_at: string;
  operation_id: string;
  tenant: string;
  node_name: string | null;
  reason: string;
  /** When a create was last let through this floor to prove it again (migration 0020); null: never. */
  probe_at?: string | null;
}

/**
 * `image_run_disks` (migration 0020): the smallest disk, in MiB, with which a sandbox of each
 * image reached `running`. A floor above it is never learned, and a floor above it is lowered.
 */
export interface ImageRunDisksTable {
  image: string;
  smallest_disk_mib: number;
  ran_at: string;
}

/**
 * `operations`: one row per operation (a create or a delete), the projection of its workflow
 * (docs/architecture.md, "Consistency between Temporal and the store"). Done when `phase` is
 * `finished`. `error_details` is JSON text (camelCase keys).
 */
export interface OperationsTable {
  /** `op_…`, also the workflow id. */
  id: string;
  /** 'sandbox.create' | 'sandbox.delete' */
  type: string;
  tenant: string;
  sandbox_id: string;
  /** 'running' | 'succeeded' | 'failed' | 'cancelled' */
  status: string;
  /** A create phase, or 'deleting' */
  phase: string;
  error_code: string | null;
  error_message: string | null;
  error_details: string | null;
  workflow_id: string;
  /** The workflow run, once a workflow step has written it. */
  run_id: string | null;
  deadline_at: string | null;
  /** JSON array of PlacementRecord (refused placements, oldest first); null: none. */
  placements: string | null;
  /** W3C trace id of the create's trace (migration 0007); null when traces were off. */
  trace_id: string | null;
  /**
   * JSON of the sandbox's `sandboxes` row as it was when the operation succeeded (migration
   * 0009, src/store/operation-results.ts); null before, for failed and cancelled operations, and
   * on rows written by the release before.
   */
  result_sandbox: string | null;
  created_at: string;
  updated_at: string;
  /** Why a delete was started: `requested` or `expired` (migration 0014); null for creates. */
  cause: string | null;
  /** When the phase became `finished` (migration 0022); null before. */
  end_time?: string | null;
  /** When a cancel of the create was first asked (migration 0022); null: never. */
  cancel_requested_at?: string | null;
  /** How a create got its pod, `warm` or `cold` (migration 0022); null until it has one. */
  create_path?: string | null;
}

/**
 * `webhook_endpoints`: a tenant's webhook endpoint (migration 0013). `event_types` is a JSON
 * array; `secret` is the current `whsec_…` signing secret; `previous_secret` still signs until
 * `previous_secret_expires_at` after a rotation.
 */
export interface WebhookEndpointsTable {
  id: string;
  tenant: string;
  url: string;
  event_types: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * `webhook_events`: an event the worker emitted (migration 0013), kept for the delivery window:
 * `payload` is the exact JSON body a delivery signs and sends.
 */
export interface WebhookEventsTable {
  /** `evt_…`, the `webhook-id`. */
  id: string;
  tenant: string;
  sandbox_id: string;
  type: string;
  payload: string;
  created_at: string;
  /**
   * Its place in the event feed (migration 0021): increasing in the order events were written,
   * across tenants; null only on a row the release before wrote.
   */
  seq?: number | string | null;
}

/** `webhook_deliveries`: one row per delivery attempt (migration 0013). */
export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  sandbox_id: string;
  attempt: number;
  /** 'succeeded' | 'failed' | 'refused' */
  status: string;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
  created_at: string;
}

/**
 * `webhook_endpoint_events`: one event as one endpoint hears it (migration 0017): where its
 * delivery stands, and the round of its current sending (0 for the first; a recover raises it).
 */
export interface WebhookEndpointEventsTable {
  endpoint_id: string;
  event_id: string;
  sandbox_id: string;
  event_type: string;
  /** contract/webhook.ts `WebhookEventState` */
  status: string;
  round: number;
  /** The delivery that took this round (`workflow id/run id/activity id`); null until one does. */
  holder: string | null;
  /** When the event was emitted (ISO-8601 UTC): what a recover's `since` compares with. */
  emitted_at: string;
  updated_at: string;
}

/** The whole schema, for `Kysely<Database>`. */
export interface Database {
  sandboxes: SandboxesTable;
  sandbox_labels: SandboxLabelsTable;
  executions: ExecutionsTable;
  idempotency_keys: IdempotencyKeysTable;
  rootfs_floors: RootfsFloorsTable;
  image_run_disks: ImageRunDisksTable;
  operations: OperationsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_endpoint_events: WebhookEndpointEventsTable;
  warm_pools: WarmPoolsTable;
  warm_pods: WarmPodsTable;
  tenant_rate_buckets: TenantRateBucketsTable;
  event_feed_horizons: EventFeedHorizonsTable;
}

/**
 * `event_feed_horizons` (migration 0023): per tenant, the highest event number (`seq`) a
 * retention purge deleted; PostgreSQL answers bigint as a string.
 */
export interface EventFeedHorizonsTable {
  tenant: string;
  purged_through_seq: number | string;
}

/**
 * `tenant_rate_buckets` (migration 0019): a tenant's create-rate token bucket
 * (contract/create-rate.ts): its tokens in thousandths at `updated_at_ms` (epoch ms). PostgreSQL
 * answers bigint as a string.
 */
export interface TenantRateBucketsTable {
  tenant: string;
  millitokens: number | string;
  updated_at_ms: number | string;
}

/**
 * `warm_pods` (migration 0015): a pool pod this installation made, by uid, with the fingerprint
 * of its image, resources and settings (src/kubernetes/warm-pods.ts `warmPodFingerprint`).
 */
export interface WarmPodsTable {
  uid: string;
  template: string;
  name: string;
  fingerprint: string;
  created_at: string;
}

/**
 * `warm_pools` (migration 0015): a template's pool as the scale route and its reconciles left
 * it. `size` null: the template's configured size; `status`: JSON of the last reconcile's
 * WarmPoolStatus, observed at `observed_at` (ISO-8601).
 */
export interface WarmPoolsTable {
  template: string;
  size: number | null;
  claimed: number | string;
  status: string | null;
  observed_at: string | null;
  updated_at: string;
}
