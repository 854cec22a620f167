/**
 * Expected failures in the worker's log: a workflow interceptor module (bundled with the
 * workflows, src/worker/workflow-bundle.ts) that marks the SDK's closing `Workflow failed` line of a
 * workflow that failed with an expected outcome, the caller's error (contract/operation.ts,
 * `isExpectedFailure`: a node refusing the disk). The worker's log forwarder
 * (src/worker/runtime.ts `sdkLogForwarder`) counts a marked line as debug instead of warn: it is
 * written only with TEMPORAL_LOG_LEVEL at DEBUG or TRACE (the default WARN drops it) and pino at
 * debug, so a refusal is one info line (the wait's), not warnings with stack traces.
 *
 * Why an interceptor: the SDK logs `Workflow failed` at warn for any failure (Temporal TypeScript
 * SDK, workflow/src/logs.ts), and the error reaches the worker's logger as a structured clone
 * that keeps only its message and stack. An inbound `execute` interceptor sees the failure
 * first; the outbound `getLogAttributes` adds the mark to the lines logged after it.
 *
 * Deterministic: no I/O, no commands; it only adds a log attribute.
 */
import {
  ApplicationFailure,
  type Next,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import {
  EXPECTED_FAILURE_LOG_ATTRIBUTE,
  errorCodeOfFailureType,
  isExpectedFailure,
} from '../../contract/index.js';

/** The interceptors of this module (the SDK calls it once per workflow execution). */
export const interceptors: WorkflowInterceptorsFactory = () => {
  let expected: string | undefined;
  const inbound: WorkflowInboundCallsInterceptor = {
    // Not `async`: one promise fewer per workflow in the sandbox, where the SDK captures a stack
    // trace for each (issue 50); the failure reaches the SDK as soon as it did.
    execute(
      input: WorkflowExecuteInput,
      next: Next<WorkflowInboundCallsInterceptor, 'execute'>,
    ): Promise<unknown> {
      return next(input).catch((err: unknown) => {
        if (err instanceof ApplicationFailure) {
          const code = errorCodeOfFailureType(err.type);
          if (isExpectedFailure(code)) expected = code;
        }
        throw err;
      });
    },
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    getLogAttributes(
      input: Record<string, unknown>,
      next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
    ): Record<string, unknown> {
      return next(expected ? { ...input, [EXPECTED_FAILURE_LOG_ATTRIBUTE]: expected } : input);
    },
  };
  return { inbound: [inbound], outbound: [outbound] };
};
