/**
 * The failure converter bundled with the workflows (src/worker/workflow-bundle.ts): Temporal's
 * default one, except that no failure a workflow reports carries a stack trace. A create's
 * failure (its own and every cause in its chain, such as the readiness wait's `InvalidRequest`)
 * is what the API, the CLI and the Temporal UI show; a stack there names the worker's local
 * files and helps no caller: an error a caller sees has a code, a message and no stack trace.
 * The worker's log lines keep the stacks. Source: Temporal TypeScript SDK, `DefaultFailureConverter` and
 * `DataConverter.failureConverterPath` (the bundler imports this module's `failureConverter`).
 */
import {
  DefaultFailureConverter,
  type PayloadConverter,
  type ProtoFailure,
  type SerializationContext,
} from '@temporalio/common';

/** {@link DefaultFailureConverter} whose `errorToFailure` leaves `stackTrace` empty, causes too. */
export class StacklessFailureConverter extends DefaultFailureConverter {
  /**
   * The default conversion (message, type, details, cause chain), every `stackTrace` emptied.
   * A failure decoded from history (an activity's) is copied, never changed in place.
   */
  override errorToFailure(
    err: unknown,
    payloadConverter: PayloadConverter,
    context?: SerializationContext,
  ): ProtoFailure {
    return withoutStackTraces(super.errorToFailure(err, payloadConverter, context));
  }
}

/** A copy of `failure` and of each cause with `stackTrace` empty. */
export function withoutStackTraces(failure: ProtoFailure): ProtoFailure {
  return {
    ...failure,
    stackTrace: '',
    cause: failure.cause ? withoutStackTraces(failure.cause) : failure.cause,
  };
}

/** The instance the workflow bundle uses (the bundler requires this export name). */
export const failureConverter = new StacklessFailureConverter();
