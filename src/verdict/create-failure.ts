/**
 * A create's non-retryable failures, typed in one place by contract/operation.ts's table: the
 * ApplicationFailure of a readiness wait that ended without an IP, and the helper every step uses.
 * Pure (no logging, no activity context), so the wait activity and the pending-wait decider
 * (src/verdict/readiness-decider.ts) build the very same failure.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { PodRef } from '../kubernetes/pods.js';
import type { ReadinessOutcome } from './readiness-watch.js';
import { parseRootfsFloor } from './refusal.js';
import {
  OPERATION_ERRORS,
  PLACEMENT_FAILURE_TYPES,
  isExpectedFailure,
  type CreateFailureDetails,
  type NodeRefusalDetails,
} from '../../contract/index.js';

/**
 * A create's non-retryable failure: the ApplicationFailure type is the one contract/operation.ts
 * gives `details.code`, so the type and the code cannot disagree.
 */
export function createFailure(message: string, details: CreateFailureDetails): ApplicationFailure {
  return ApplicationFailure.create({
    message,
    type: OPERATION_ERRORS[details.code].failureType,
    nonRetryable: true,
    details: [details],
    // An expected outcome (the caller's error): the SDK logs it at debug and counts no failure.
    ...(isExpectedFailure(details.code) ? { category: ApplicationFailureCategory.BENIGN } : {}),
  });
}

/**
 * The non-retryable ApplicationFailure of a readiness wait that ended without an IP, details as
 * {@link CreateFailureDetails}:
 * - `refused` -> `InvalidRequest`, message `the node refused the sandbox: <reason>`, with the
 *   refusal event's name and time, the node and the rootfs size it stated (MiB);
 * - `watchRefused` -> `Unavailable` (the worker may not watch pods: a configuration problem);
 * - `nodeRefused` -> `NodeRefused` with {@link NodeRefusalDetails} (the workflow re-places);
 * - `unschedulable` -> `Unschedulable` with the scheduler's message (no node is left);
 * - `podFailed` -> `PodFailed`.
 */
export function readinessFailure(
  outcome: Exclude<ReadinessOutcome, { outcome: 'ready' }>,
  pod: Pick<PodRef, 'name' | 'uid'>,
): ApplicationFailure {
  const podFields = { podName: pod.name, podUid: pod.uid };
  if (outcome.outcome === 'nodeRefused') {
    const details: NodeRefusalDetails = {
      nodeName: outcome.nodeName,
      code: outcome.code,
      reason: outcome.reason,
      eventName: outcome.eventName,
      eventLastTimestamp: outcome.eventLastTimestamp,
      ...podFields,
    };
    return ApplicationFailure.nonRetryable(
      `node ${outcome.nodeName || '(unnamed)'} cannot run the sandbox (${outcome.code}): ${outcome.reason}`,
      PLACEMENT_FAILURE_TYPES.nodeRefused,
      details,
    );
  }
  if (outcome.outcome === 'unschedulable') {
    return ApplicationFailure.nonRetryable(
      `no node can take pod ${pod.name}: ${outcome.reason}`,
      PLACEMENT_FAILURE_TYPES.unschedulable,
      { reason: outcome.reason, ...podFields },
    );
  }
  if (outcome.outcome === 'refused') {
    return createFailure(`the node refused the sandbox: ${outcome.reason}`, {
      code: 'invalid_request',
      reason: outcome.reason,
      ...podFields,
      eventName: outcome.eventName,
      eventLastTimestamp: outcome.eventLastTimestamp,
      nodeName: outcome.nodeName,
      rootfsMib: parseRootfsFloor(outcome.reason),
    });
  }
  if (outcome.outcome === 'watchRefused') {
    return createFailure(outcome.reason, {
      code: 'unavailable',
      reason: outcome.reason,
      ...podFields,
    });
  }
  return createFailure(outcome.reason, {
    code: 'pod_failed',
    reason: outcome.reason,
    ...podFields,
  });
}

/**
 * The log line of a wait's outcome without an IP: level, message and fields. A node's refusal
 * as invalid is the caller's error, the service working as intended: one `info` line with the
 * reason and the node (the activity's or decider's ids join it).
 */
export function readinessFailureLog(outcome: Exclude<ReadinessOutcome, { outcome: 'ready' }>): {
  level: 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
} {
  switch (outcome.outcome) {
    case 'refused':
      return {
        level: 'info',
        message: 'node refused the pod as invalid',
        fields: { reason: outcome.reason, node_name: outcome.nodeName, event: outcome.eventName },
      };
    case 'nodeRefused':
      return {
        level: 'warn',
        message: 'the node cannot run the pod; the create moves to another node',
        fields: { node_name: outcome.nodeName, code: outcome.code, reason: outcome.reason },
      };
    case 'unschedulable':
      return {
        level: 'warn',
        message: 'no node can take the pod',
        fields: { reason: outcome.reason },
      };
    case 'watchRefused':
      return {
        level: 'error',
        message: 'the worker cannot watch pods; the create ends',
        fields: { reason: outcome.reason },
      };
    default:
      return {
        level: 'warn',
        message: 'pod failed before it had an IP',
        fields: { reason: outcome.reason },
      };
  }
}
