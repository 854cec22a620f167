/**
 * One CLI command's session (clients/cli/program.ts runs one per command): the typed client over
 * the global options, the output format (`-o json|wide`), spinners and waits, and how errors,
 * hints and exit codes are printed.
 */
import type { Ora } from 'ora';
import {
  DurableSandboxClient,
  DurableSandboxError,
  RequestAbortedError,
} from '../typescript/src/index.js';
import { formatOperation, progressText } from './format.js';
import type { Operation } from './types.js';

export const PROGRAM = 'durable-sandbox';
/**
 * How hints spell a command to run next: `npx durable-sandbox`, which works in the checkout
 * after `npm ci` (`durable-sandbox` alone is on PATH only after `npm link`).
 */
export const RUN = `npx ${PROGRAM}`;

/** Where the program reads and writes; the process by default. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { columns?: number; isTTY?: boolean };
  stderr: NodeJS.WritableStream & { columns?: number; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
  /**
   * Aborts when the user presses Ctrl-C (reason `'SIGINT'`) or on SIGTERM (`'SIGTERM'`): a wait
   * stops and says how to follow the operation.
   */
  signal?: AbortSignal;
}

export interface GlobalOptions {
  apiUrl: string;
  token: string;
  json: boolean;
  output?: 'wide' | 'json';
}

/** Exit code of a run that failed (operation failed, API error). */
export const FAILED = 1;
/** Exit code of a usage error. */
export const USAGE = 2;
/** Exit code after Ctrl-C (128 + SIGINT), as shells report it. */
const INTERRUPTED = 130;
/** Exit code after SIGTERM (128 + SIGTERM). */
const TERMINATED = 143;

/** Exit code after `signal` aborted the command: 143 for SIGTERM, 130 otherwise (Ctrl-C). */
export function interruptedExitCode(signal: AbortSignal | undefined): number {
  return signal?.reason === 'SIGTERM' ? TERMINATED : INTERRUPTED;
}

/** How often the spinner's elapsed time is redrawn while waiting, in ms. */
const SPINNER_REFRESH_MS = 1000;

/**
 * Whether a spinner may draw on `stream`: a terminal that reports its width. A terminal of 0
 * columns (e.g. `script` run from a non-terminal) gets plain lines, as a pipe does.
 */
export function isTerminal(stream: { isTTY?: boolean; columns?: number }): boolean {
  return Boolean(stream.isTTY) && (stream.columns ?? 0) > 0;
}

/** What a person can do about an error code, printed under the error (never with `-o json`). */
const ERROR_HINTS: Record<string, string> = {
  quota_exceeded:
    'a resource quota of the sandbox namespace, or one of your tenant limits, is exhausted: ' +
    `retry later, or delete sandboxes you no longer need (\`${RUN} quota\` shows your limits)`,
  rate_limited: `too fast or too many at once for your tenant's limits: retry after a moment (\`${RUN} quota\` shows them)`,
  unavailable: 'the service cannot work right now; its /readyz names what is wrong',
  cursor_expired: `events after that cursor were purged (retention): read again without --after (\`${RUN} events\`) and skip the event ids you have seen`,
};

/**
 * The hint of a synchronous create that ran out of its budget (`pod_never_ready` from
 * `/sync/v1/sandboxes`): the same request again meets the same budget.
 */
export const SYNC_NEVER_READY_HINT =
  'the create failed and its pod was deleted; for a pod that needs longer, create without ' +
  `--sync (\`${RUN} create … --wait\`: the asynchronous route, deadline CREATE_DEADLINE_MS), ` +
  'or start the API with a longer SYNC_READINESS_BUDGET_MS';

/**
 * The hint of an `unavailable` error with no answer at all (status 0): nothing listens at the
 * URL the CLI used, which /readyz cannot explain.
 */
function unreachableHint(apiUrl: string): string {
  return (
    `is the API running at ${apiUrl}? Start it (npm start), or point the CLI at it: ` +
    'DURABLE_SANDBOX_URL=http://host:port (or --api-url)'
  );
}

/** A usage error found after parsing (e.g. an id of the wrong kind); exits 2. */
export class UsageError extends Error {}

/**
 * Prints an API error as `error: <code>: <message>`, then what a person can do about it: `hint`
 * when the command knows better, else the code's hint; for no answer at all (status 0), where the
 * CLI looked, which /readyz cannot explain.
 * @returns the exit code of a failed command
 */
export function reportApiError(
  io: CliIo,
  err: DurableSandboxError,
  apiUrl: string,
  hint: string | undefined = ERROR_HINTS[err.code],
): number {
  io.stderr.write(`error: ${err.code}: ${err.message}\n`);
  const shown = err.status === 0 ? unreachableHint(apiUrl) : hint;
  if (shown) io.stderr.write(`hint: ${shown}\n`);
  return FAILED;
}

/** What one command runs with: the typed client, the output format, and how to print and wait. */
export class Session {
  readonly client: DurableSandboxClient;
  readonly json: boolean;

  constructor(
    readonly io: CliIo,
    readonly options: GlobalOptions,
  ) {
    this.client = new DurableSandboxClient({
      baseUrl: options.apiUrl,
      token: options.token,
      fetch: io.fetch,
      signal: io.signal,
    });
    this.json = options.json || options.output === 'json';
  }

  out(text: string): void {
    this.io.stdout.write(text);
  }

  /** Prints `value` as JSON (with `-o json`) or with the human formatter. */
  show<T>(value: T, human: (value: T) => string): void {
    this.out(this.json ? `${JSON.stringify(value, null, 2)}\n` : human(value));
  }

  /** Table options: `-o wide`, and the terminal's width when stdout is one. */
  table() {
    return {
      wide: this.options.output === 'wide',
      columns: this.io.stdout.isTTY ? this.io.stdout.columns : undefined,
    };
  }

  error(code: string, message: string): void {
    this.io.stderr.write(`error: ${code}: ${message}\n`);
  }

  /** Aborts on Ctrl-C or SIGTERM (the CLI's `io.signal`). */
  get signal(): AbortSignal | undefined {
    return this.io.signal;
  }

  /** The exit code after the signal aborted the command: 130 (Ctrl-C) or 143 (SIGTERM). */
  interruptedExitCode(): number {
    return interruptedExitCode(this.io.signal);
  }

  /** Prints a line on stderr, also with `-o json` (what a stopped command leaves to resume). */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  /** Prints a hint for a person on stderr (never with `-o json`). */
  hint(text: string): void {
    if (!this.json) this.io.stderr.write(`${text}\n`);
  }

  /**
   * A spinner on stderr; silent with `-o json`. It leaves stdin alone (ora's `discardStdin`
   * would put the terminal in raw mode, and Ctrl-C would no longer be a signal). Off a terminal
   * (see {@link isTerminal}) it prints plain lines. ora is loaded only here, so commands that do
   * not wait start faster.
   */
  async spinner(text: string): Promise<Ora> {
    const { default: ora } = await import('ora');
    return ora({
      text,
      stream: this.io.stderr,
      isSilent: this.json,
      // undefined: ora decides (not with CI or TERM=dumb).
      isEnabled: isTerminal(this.io.stderr) ? undefined : false,
      discardStdin: false,
    });
  }

  /**
   * Stops a spinner with its outcome: a coloured ✔ or ✖ on a terminal, a plain `- text` line
   * otherwise (no symbols or colour codes), nothing with `-o json`.
   */
  outcome(spinner: Ora, ok: boolean, text: string): void {
    if (spinner.isEnabled) {
      if (ok) spinner.succeed(text);
      else spinner.fail(text);
      return;
    }
    spinner.stop();
    if (!this.json) this.io.stderr.write(`- ${text}\n`);
  }

  /** Prints a finished operation; 0 when it ended as `expected`. Its error is printed once. */
  finished(operation: Operation, expected: Operation['status'] = 'succeeded'): number {
    this.show(operation, (op) => formatOperation(op, { withError: false }));
    if (operation.status === expected) return 0;
    const error = operation.error ?? {
      code: operation.status,
      message: `operation ${operation.status}`,
    };
    this.error(error.code, error.message);
    const hint = ERROR_HINTS[error.code];
    if (hint) this.hint(`hint: ${hint}`);
    return FAILED;
  }

  /** An operation the API accepted: printed as is, or waited for with `--wait`. */
  async accepted(operation: Operation, wait: boolean): Promise<number> {
    if (wait) return this.wait(operation);
    this.show(operation, formatOperation);
    this.hint(`follow it: ${RUN} wait ${operation.id}`);
    return 0;
  }

  /**
   * Waits until the operation is done, with a spinner showing its phase (plain lines when stderr
   * is not a terminal). Ctrl-C stops the wait, not the operation: exit 130 and the commands to
   * follow or cancel it.
   */
  async wait(
    start: Operation | string,
    expected: Operation['status'] = 'succeeded',
  ): Promise<number> {
    const operationId = typeof start === 'string' ? start : start.id;
    const type = typeof start === 'string' ? undefined : start.type;
    const spinner = (await this.spinner(`${operationId}: waiting`)).start();
    let lastPhase = '';
    let current: Operation | undefined;
    let operation: Operation;
    // A long-poll answers only on a change: the elapsed time is redrawn from a timer.
    const refresh = spinner.isEnabled
      ? setInterval(() => {
          if (current && !current.done) spinner.text = progressText(current, inPhaseMs(current));
        }, SPINNER_REFRESH_MS)
      : undefined;
    try {
      operation = await this.client.waitForOperation(operationId, {
        signal: this.io.signal,
        onUpdate: (update) => {
          current = update;
          if (update.done) return; // the outcome is printed below
          spinner.text = progressText(update, inPhaseMs(update));
          if (update.phase !== lastPhase && !spinner.isEnabled && !this.json) {
            this.io.stderr.write(`- ${spinner.text}\n`);
          }
          lastPhase = update.phase;
        },
      });
    } catch (err) {
      spinner.stop();
      if (err instanceof RequestAbortedError) {
        // Nothing left to cancel for a delete, or for a create whose cancel was requested.
        const cancellable =
          (current?.type ?? type) !== 'sandbox.delete' && expected !== 'cancelled';
        return this.interrupted(operationId, cancellable);
      }
      throw err;
    } finally {
      clearInterval(refresh);
    }
    this.outcome(spinner, operation.status === expected, `${operationId}: ${operation.status}`);
    return this.finished(operation, expected);
  }

  /** After Ctrl-C in a wait: the operation goes on; how to follow (and cancel) it. */
  interrupted(operationId: string, cancellable: boolean): number {
    const lines = [
      `Stopped waiting. ${operationId} goes on (Ctrl-C does not cancel it).`,
      `  follow it:  ${RUN} wait ${operationId}`,
      ...(cancellable ? [`  cancel it:  ${RUN} cancel ${operationId}`] : []),
    ];
    this.io.stderr.write(`${lines.join('\n')}\n`);
    return interruptedExitCode(this.io.signal);
  }
}

/**
 * How long the operation has been in its phase, in ms: since its last change (`updated_at`,
 * the API's clock), not since this CLI started waiting.
 */
function inPhaseMs(operation: Operation): number {
  return Date.now() - Date.parse(operation.updated_at);
}

/** Wraps a command's body so its exit code reaches `run` (clients/cli/program.ts). */
export type Action = <A extends unknown[]>(
  fn: (s: Session, ...args: A) => Promise<number>,
) => (...args: A) => Promise<void>;
