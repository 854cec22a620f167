/**
 * A sandbox's lifetime (docs/api.md, "Lifetimes"; Google AIP-214, resource expiration): a
 * create's `ttl`, counted from the moment the sandbox runs, gives it an `expire_time`; at that
 * time the `sandboxLifetime` workflow (src/workflows/sandbox-lifetime.ts) deletes it through the
 * same `deleteSandbox` workflow as `DELETE`, under an operation whose `cause` is `expired`.
 * Types, constants and pure functions only, so the workflow bundle may import it.
 */

/** The longest lifetime anything may ask for, in ms (366 days): a template's `max_ttl` at most. */
export const MAX_TTL_LIMIT_MS = 366 * 24 * 3_600_000;

/**
 * A duration as AIP-142 spells it in JSON (protobuf `Duration`): seconds with up to nine
 * fractional digits and an `s`, e.g. `"3600s"`, `"1.5s"`.
 */
const DURATION = /^(\d{1,12})(?:\.(\d{1,9}))?s$/;

/**
 * Parses an AIP-142 duration (`"3600s"`) into whole ms (fractions of a ms are rounded up, so a
 * lifetime is never shorter than asked).
 * @returns the duration in ms, or undefined when `text` is not such a duration
 */
export function parseDurationMs(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const fraction = (match[2] ?? '').padEnd(9, '0');
  const nanos = Number(match[1]) * 1e9 + Number(fraction);
  return Math.ceil(nanos / 1e6);
}

/** A duration in ms as AIP-142 spells it (`90000` -> `"90s"`, `1500` -> `"1.5s"`). */
export function formatDuration(ms: number): string {
  return `${ms / 1000}s`;
}

/**
 * Why a delete operation was started (`cause` of a `sandbox.delete` operation): `requested` by
 * a caller (`DELETE /v1/sandboxes/{id}`), or `expired` when the sandbox reached its
 * `expire_time`.
 */
export const DELETE_CAUSES = ['requested', 'expired'] as const;
/** A delete's cause. */
export type DeleteCause = (typeof DELETE_CAUSES)[number];

/** The workflow type of a sandbox's lifetime. */
export const LIFETIME_WORKFLOW = 'sandboxLifetime';

/**
 * The signal that tells a lifetime its sandbox's `expire_time` changed (an extend): its
 * argument is the new time (ISO-8601). Only a wake-up: the workflow acts on the store's time.
 */
export const EXPIRE_TIME_SIGNAL = 'expireTimeChanged';

/** The lifetime workflow of a sandbox: one per sandbox, so starting it twice starts it once. */
export function lifetimeWorkflowId(sandboxId: string): string {
  return `lifetime-${sandboxId}`;
}

/** Input of the `sandboxLifetime` workflow. */
export interface SandboxLifetimeInput {
  sandboxId: string;
  tenantId: string;
  /** The sandbox's `expire_time` when the lifetime started (ISO-8601). */
  expireTime: string;
}

/**
 * What a lifetime's timer found when it fired (the `expireSandbox` activity):
 * - `deleting`: the sandbox had expired; the delete `operationId` was started (or had been).
 * - `extended`: its `expire_time` is later than the timer (an extend whose signal was lost).
 * - `ended`: it no longer runs (deleted, failed, lost): nothing to do.
 */
export type ExpiryOutcome =
  | { kind: 'deleting'; operationId: string }
  | { kind: 'extended'; expireTime: string }
  | { kind: 'ended'; state: string };
