/**
 * The HTTP boundary's spelling: the API's JSON is snake_case (`memory_mib`, `pod_ip` style,
 * `operation_id`), everything behind it camelCase (contract/). This file and
 * contract/sandbox-json.ts (the Sandbox JSON and its resources, which webhook events carry too)
 * are the places that convert between the two: request bodies in, Sandbox and Operation JSON and
 * error details out. The JSON shapes are documented in src/api/openapi.json.
 */
import {
  resourcesToWire,
  sandboxToWire,
  type CreatePath,
  type DeleteCause,
  type LearnedRootfsFloor,
  type RootfsFloor,
  type RootfsFloorSource,
  type OperationErrorCode,
  type OperationPhase,
  type OperationStatus,
  type PlacementRecord,
  type SandboxJson,
  type WireResources,
} from '../../contract/index.js';
import { runsAsRoot, warmPoolOf, type TemplateConfig } from '../config/index.js';
import type { FeedEventRecord } from '../store/index.js';
import type { OperationPage } from './operation-list.js';
import type { Operation, OperationType } from './operation-read.js';

/** `camelCase` -> `snake_case`. */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * An object with its keys in snake_case, also inside nested objects and arrays (e.g. the
 * `placements` of `no_node_available`); undefined values dropped. Snake_case keys stay as they are.
 */
export function detailsToWire(details: Record<string, unknown>): Record<string, unknown> {
  const wire: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (value !== undefined) wire[snakeCase(key)] = valueToWire(value);
  }
  return wire;
}

function valueToWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(valueToWire);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return detailsToWire(value as Record<string, unknown>);
  }
  return value;
}

/** An operation as the API shows it. Timestamps are ISO-8601 UTC. */
export interface OperationJson {
  id: string;
  type: OperationType;
  sandbox_id: string;
  status: OperationStatus;
  done: boolean;
  phase: OperationPhase;
  error: { code: OperationErrorCode; message: string; details: Record<string, unknown> } | null;
  result: { sandbox: SandboxJson } | null;
  created_at: string;
  updated_at: string;
  /** When a create's deadline passes; null for deletes, which have none. */
  deadline_at: string | null;
  /**
   * Why a delete was started: `requested` by a caller, `expired` by the sandbox's lifetime;
   * null for a create.
   */
  cause: DeleteCause | null;
  /** The operation's workflow in the Temporal UI; null unless the API knows the UI's address. */
  temporal_ui_url: string | null;
  /** W3C trace id (32 hex digits) of the trace the create was recorded in; null when traces are off. */
  trace_id: string | null;
  /** AIP-151's name of `created_at` (the same time); `created_at` stays for compatibility. */
  create_time: string;
  /** When the operation finished (AIP-151); null while it runs. */
  end_time: string | null;
  /**
   * AIP-151: true once a cancel was asked (`POST /v1/operations/{id}/cancel`, or a DELETE of the
   * sandbox a create makes), whatever came of it.
   */
  requested_cancellation: boolean;
  /**
   * A create's refused placements (docs/architecture.md, "Re-placement"); empty when none. `path`:
   * how a create got its pod, `warm` (from its template's pool) or `cold`; null until it had
   * one, and for a delete. `attempts`: how many pods a create placed, refused ones included
   * (src/api/create-attempts.ts); null for a delete.
   */
  details: { placements: PlacementJson[]; path: CreatePath | null; attempts: number | null };
}

/** One refused placement as the API shows it; `at` is ISO-8601 UTC. */
export interface PlacementJson {
  placement: number;
  node: string;
  code: string;
  reason: string;
  at: string;
  pod_name: string;
}

/** A refused placement -> the API's spelling (`nodeName` is `node`; the pod uid stays inside). */
export function placementToWire(placement: PlacementRecord): PlacementJson {
  return {
    placement: placement.placement,
    node: placement.nodeName,
    code: placement.code,
    reason: placement.reason,
    at: placement.at,
    pod_name: placement.podName,
  };
}

/** Maps an operation to its API JSON; the error's details get snake_case keys. */
export function operationToWire(operation: Operation): OperationJson {
  const { error, result } = operation;
  return {
    id: operation.id,
    type: operation.type,
    sandbox_id: operation.sandboxId,
    status: operation.status,
    done: operation.done,
    phase: operation.phase,
    error: error && {
      code: error.code,
      message: error.message,
      details: detailsToWire(error.details),
    },
    result: result && { sandbox: sandboxToWire(result.sandbox) },
    created_at: operation.createdAt,
    updated_at: operation.updatedAt,
    deadline_at: operation.deadlineAt,
    cause: operation.cause,
    temporal_ui_url: operation.temporalUiUrl,
    create_time: operation.createdAt,
    end_time: operation.endTime,
    requested_cancellation: operation.cancellationRequested,
    details: {
      placements: operation.placements.map(placementToWire),
      path: operation.createPath,
      attempts: operation.attempts,
    },
    trace_id: operation.traceId,
  };
}

/** A page of operations as the API shows it; `next_page_token` is null on the last page. */
export function operationPageToWire(page: OperationPage): {
  operations: OperationJson[];
  next_page_token: string | null;
} {
  return { operations: page.operations.map(operationToWire), next_page_token: page.nextPageToken };
}

/**
 * One event of the feed as the API shows it: the webhook's `webhook-id` as `id`, and its body
 * (`type`, `timestamp`, `data`) as a delivery sends it.
 */
export interface EventJson {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** A page of the event feed: the events, oldest first, and the cursor after the last. */
export function eventPageToWire(
  events: readonly FeedEventRecord[],
  nextCursor: string,
): { events: EventJson[]; next_cursor: string } {
  return {
    events: events.map((event) => ({
      id: event.id,
      ...(JSON.parse(event.payload) as Omit<EventJson, 'id'>),
    })),
    next_cursor: nextCursor,
  };
}

/** A template's rootfs floor as the API shows it (see {@link rootfsFloorToWire}). */
export interface RootfsFloorJson {
  source: RootfsFloorSource;
  rootfs_mib: number | null;
  learned_at?: string;
  node_name?: string | null;
  reason?: string;
  operation_id?: string | null;
}

/**
 * A template's rootfs floor as the API shows it (`GET /v1/templates`, a refusal's details):
 * `source` `declared`, `learned` or `unknown`; `rootfs_mib` (null when unknown); for a learned
 * floor, to the tenant whose refused create taught it, the evidence: `learned_at` (the refusal
 * event's time, ISO-8601), `node_name`, the `reason` and `operation_id`; to any other tenant the
 * size alone (where and when another tenant's create was refused is not theirs to read).
 */
export function rootfsFloorToWire(floor: RootfsFloor, tenant: string): RootfsFloorJson {
  if (floor.source === 'unknown') return { source: 'unknown', rootfs_mib: null };
  if (floor.source === 'declared') return { source: 'declared', rootfs_mib: floor.rootfsMib };
  const { learned } = floor;
  // Another tenant's refusal: its size only, not where or when it happened.
  if (learned.tenantId !== tenant) return { source: 'learned', rootfs_mib: floor.rootfsMib };
  return {
    source: 'learned',
    rootfs_mib: floor.rootfsMib,
    learned_at: new Date(learned.learnedAtMs).toISOString(),
    node_name: learned.nodeName,
    reason: learnedFloorReason(learned),
    operation_id: learned.tenantId === tenant ? learned.operationId : null,
  };
}

/**
 * A learned floor's `reason` as every tenant sees it, built from the floor's own fields (template,
 * size, node, time) and never from the node's text, which names the refused request's disk
 * (another tenant's value): `node sim-node-1 refused a create of template base: cloned rootfs
 * size 451 MiB (2026-01-01T00:00:00.000Z)`. Floors stored before this rule keep the node's text
 * in the store; it is shown only on the operators' route (docs/api.md, "Operator routes").
 */
export function learnedFloorReason(
  learned: Pick<LearnedRootfsFloor, 'template' | 'rootfsMib' | 'nodeName' | 'learnedAtMs'>,
): string {
  const node = learned.nodeName ? `node ${learned.nodeName}` : 'a node';
  return (
    `${node} refused a create of template ${learned.template}: cloned rootfs size ` +
    `${learned.rootfsMib} MiB (${new Date(learned.learnedAtMs).toISOString()})`
  );
}

/** A catalog entry as `GET /v1/templates` shows it. */
export interface TemplateJson {
  name: string;
  image: string;
  rootfs_floor: RootfsFloorJson;
  /** The lifetime a create gets when it asks for none (`"3600s"`); null: no expiry. */
  default_ttl: string | null;
  /** The longest lifetime from running a create or extend may give; null: no bound of its own. */
  max_ttl: string | null;
  /**
   * The template's warm pool as a tenant needs it: the `resources` a create asks for to claim a
   * ready pod (docs/architecture.md, "Warm pools"); null: no pool, every create is cold. Its size
   * and status are the operator's (`/admin/v1/warm-pools`).
   */
  warm_pool: { resources: WireResources } | null;
  /**
   * True when the template opted out of running as a non-root user (`run_as_root`, for an image
   * that needs root): its pods meet Pod Security `baseline` only, and a namespace enforcing
   * `restricted` refuses them. False: the default, `runAsNonRoot` (docs/configuration.md).
   */
  run_as_root: boolean;
}

/** A template, its image, its effective floor and its lifetimes as the API shows them. */
export function templateToWire(
  name: string,
  template: Pick<
    TemplateConfig,
    'image' | 'default_ttl' | 'max_ttl' | 'warm_pool' | 'run_as_root' | 'run_as_non_root'
  >,
  floor: RootfsFloor,
  tenant: string,
): TemplateJson {
  const pool = warmPoolOf(template);
  return {
    name,
    image: template.image,
    rootfs_floor: rootfsFloorToWire(floor, tenant),
    default_ttl: template.default_ttl ?? null,
    max_ttl: template.max_ttl ?? null,
    warm_pool: pool ? { resources: resourcesToWire(pool.resources) } : null,
    run_as_root: runsAsRoot(template),
  };
}
