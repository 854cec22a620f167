/**
 * What the attempts of one `createPod` step prove about its pod, carried from attempt to attempt
 * in the activity's heartbeat details: Temporal keeps the details the last attempt recorded and
 * hands them to the next attempt as `Info.heartbeatDetails` (Temporal, "Activity heartbeats":
 * the details survive retries of the activity).
 *
 * An attempt the apiserver refused with a definite answer made no pod; an attempt that timed
 * out, lost its connection or got a 5xx after its POST was sent may have (the apiserver can
 * store the pod and fail to answer). A create whose every attempt was refused definitely knows
 * there is no pod, so its compensation has none to delete.
 */
import { Context, type Info } from '@temporalio/activity';
import type { ApiserverError } from '../kubernetes/apiserver-errors.js';

/** The heartbeat details of a `createPod` attempt refused definitely. */
export interface CreateAttemptsRecord {
  /** Attempts 1 to `refusedThrough` (1-based) each got a definite refusal. */
  refusedThrough: number;
}

/**
 * Whether the apiserver's answer proves the request stored nothing: it answered 4xx other than
 * 408 (the apiserver's own timeout: the create may go on) and 409 (a pod of that name exists),
 * or the client could not send the request at all (`configuration`). 401, 403 (RBAC,
 * admission, quota), 404, 422 and 429 are decided before the object is stored
 * (kube-apiserver's handler chain: authentication, priority and fairness, authorization,
 * admission, then storage).
 */
export function isDefiniteRefusal(answer: ApiserverError): boolean {
  if (answer.kind === 'configuration') return true;
  const { status } = answer;
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 409;
}

/**
 * Whether every attempt before this one got a definite refusal: true on the first attempt;
 * on a later one, only when the previous attempt recorded `refusedThrough: attempt - 1`. An
 * attempt that ended any other way (ambiguous answer, crash, timeout) records nothing, so every
 * attempt after it reads false.
 */
export function earlierAttemptsRefused(info: Info): boolean {
  if (info.attempt <= 1) return true;
  const record = info.heartbeatDetails as Partial<CreateAttemptsRecord> | undefined;
  return record?.refusedThrough === info.attempt - 1;
}

/**
 * Records that this attempt, like every one before it, got a definite refusal, for the next
 * attempt to read ({@link earlierAttemptsRefused}). Call it just before the attempt throws;
 * the SDK sends the details with the attempt's failure.
 */
export function recordRefusedAttempt(): void {
  const { attempt } = Context.current().info;
  const record: CreateAttemptsRecord = { refusedThrough: attempt };
  Context.current().heartbeat(record);
}
