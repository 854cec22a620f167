/**
 * The `durable-sandbox` command line (commander): create, get, wait, cancel, delete, list, label,
 * templates, quota.
 * `run(argv)` is the whole program, so tests call it in process; clients/cli/main.ts wires it to the
 * process (and Ctrl-C to `io.signal`). Every call to the API goes through the typed client
 * (clients/typescript/, `@durable-sandbox/client`), so a route, body or header the API does not take is a
 * compile error (the `--idempotency-key` the CLI once declared and never sent).
 *
 * Exit codes: 0 success, 1 a failed operation or an API error, 2 a usage error, 130 when Ctrl-C
 * (143 when SIGTERM) stopped the command (a wait stops; the operation goes on).
 * Errors print `error: <code>: <message>` on stderr, once; `-o json` prints only JSON on stdout.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  CPU_FORMS,
  RESOURCE_LIMITS,
  SANDBOX_STATES,
  labelKeyErrors,
  parseCpuQuantity,
  parseLabels,
} from '../../contract/index.js';
import type { Ora } from 'ora';
import {
  DurableSandboxClient,
  DurableSandboxError,
  RequestAbortedError,
} from '../typescript/src/index.js';
import {
  formatOperation,
  formatLabels,
  formatOperationList,
  formatSandbox,
  formatSandboxList,
  formatQuota,
  formatTemplateList,
  progressText,
} from './format.js';
import type { Operation, SandboxState } from './types.js';
import { formatTraceTree } from './trace-tree.js';
import { missingTraceMessage } from './trace-missing.js';
import { addEventCommands } from './events.js';
import { addWebhookCommands } from './webhook-commands.js';

/** The API used when neither `--api-url` nor DURABLE_SANDBOX_URL is given. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';
/** The token used when neither `--token` nor DURABLE_SANDBOX_TOKEN is given (the dev token). */
export const DEFAULT_TOKEN = 'dev-token';
/** The program's name, as installed by package.json `bin`. */
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

interface GlobalOptions {
  apiUrl: string;
  token: string;
  json: boolean;
  output?: 'wide' | 'json';
}

/** Exit code of a run that failed (operation failed, API error). */
const FAILED = 1;
/** Exit code of a usage error. */
const USAGE = 2;
/** Exit code after Ctrl-C (128 + SIGINT), as shells report it. */
const INTERRUPTED = 130;
/** Exit code after SIGTERM (128 + SIGTERM). */
const TERMINATED = 143;

/** Exit code after `signal` aborted the command: 143 for SIGTERM, 130 otherwise (Ctrl-C). */
function interruptedExitCode(signal: AbortSignal | undefined): number {
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
const SYNC_NEVER_READY_HINT =
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
class UsageError extends Error {}

/**
 * Prints an API error as `error: <code>: <message>`, then what a person can do about it: `hint`
 * when the command knows better, else the code's hint; for no answer at all (status 0), where the
 * CLI looked, which /readyz cannot explain.
 * @returns the exit code of a failed command
 */
function reportApiError(
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

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) <= 0) {
    throw new InvalidArgumentError('must be a positive integer');
  }
  return Number(value);
}

/** `--cpu`: a Kubernetes CPU quantity (`0.5`, `2`, `500m`), sent as typed (contract/cpu.ts). */
function cpuQuantity(value: string): string {
  const parsed = parseCpuQuantity(value, RESOURCE_LIMITS.cpu);
  if ('problem' in parsed) throw new InvalidArgumentError(parsed.problem);
  return value;
}

/** `--label k=v` (repeatable): collects the labels, refusing a pair without `=`. */
function collectLabel(
  value: string,
  previous: Record<string, string> = {},
): Record<string, string> {
  const at = value.indexOf('=');
  if (at < 0) throw new InvalidArgumentError(`expects key=value (e.g. team=a), got "${value}"`);
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

/**
 * Checks labels as the API will (contract/labels.ts), before anything is sent.
 * @throws UsageError naming the label and the rule
 */
function checkLabels(labels: Record<string, string>): void {
  const parsed = parseLabels(labels);
  if ('problems' in parsed) {
    const [first] = parsed.problems;
    throw new UsageError(`${first?.field} ${first?.message}`);
  }
}

/**
 * The arguments of `label` as kubectl reads them: `key=value` sets, `key-` removes.
 * @throws UsageError for an argument that is neither, or a key given twice
 */
export function parseLabelArguments(args: readonly string[]): {
  set: Record<string, string>;
  remove: string[];
} {
  const set: Record<string, string> = {};
  const remove: string[] = [];
  const seen = new Set<string>();
  for (const arg of args) {
    const at = arg.indexOf('=');
    const key = at >= 0 ? arg.slice(0, at) : arg.endsWith('-') ? arg.slice(0, -1) : undefined;
    if (key === undefined || key === '') {
      throw new UsageError(`label expects key=value or key-, got "${arg}"`);
    }
    if (seen.has(key)) throw new UsageError(`label: key "${key}" is given twice`);
    seen.add(key);
    if (at >= 0) set[key] = arg.slice(at + 1);
    else remove.push(key);
  }
  checkLabels(set);
  for (const key of remove) {
    const errors = labelKeyErrors(key);
    if (errors.length > 0) throw new UsageError(`label key "${key}" is invalid: ${errors[0]}`);
  }
  return { set, remove };
}

/**
 * Checks that `id` is of the kind the command takes.
 * @throws UsageError naming the expected prefix and, for the other kind, the command that takes it
 */
function expectId(id: string, kind: 'sbx' | 'op', command: string): void {
  if (id.startsWith(`${kind}_`)) return;
  const expected = kind === 'sbx' ? 'a sandbox id (sbx_…)' : 'an operation id (op_…)';
  let hint = '';
  if (kind === 'sbx' && id.startsWith('op_')) {
    hint = `; ${id} is an operation: follow it with \`${RUN} wait ${id}\`, or stop a create with \`${RUN} cancel ${id}\``;
  } else if (kind === 'op' && id.startsWith('sbx_')) {
    hint = `; ${id} is a sandbox: see it with \`${RUN} get ${id}\``;
  }
  throw new UsageError(`${command} expects ${expected}, got "${id}"${hint}`);
}

function packageVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

/** Runs one command; resolves to its exit code. */
class Session {
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

/**
 * Runs the CLI.
 * @param argv the arguments after the program name, e.g. `['create', '--disk-mib', '2048']`
 * @returns the exit code (never throws; errors are printed on `io.stderr`)
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const program = new Command(PROGRAM)
    .description('Create and inspect sandboxes through the durable-sandbox API.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .addOption(
      new Option('--api-url <url>', 'API base URL (env DURABLE_SANDBOX_URL)').default(
        io.env.DURABLE_SANDBOX_URL || DEFAULT_API_URL,
      ),
    )
    .addOption(
      new Option('--token <token>', 'bearer token (env DURABLE_SANDBOX_TOKEN)').default(
        io.env.DURABLE_SANDBOX_TOKEN || DEFAULT_TOKEN,
      ),
    )
    .addOption(
      new Option('-o, --output <format>', 'wide: more table columns; json: the API JSON').choices([
        'wide',
        'json',
      ]),
    )
    .option('--json', 'the same as -o json', false)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });

  const session = () => new Session(io, program.opts<GlobalOptions>());
  const action =
    <A extends unknown[]>(fn: (s: Session, ...args: A) => Promise<number>) =>
    async (...args: A) => {
      exitCode = await fn(session(), ...args);
    };

  program
    .command('create')
    .description('create a sandbox (asynchronously unless --sync)')
    .option('--template <name>', 'template of the catalog', 'base')
    .requiredOption('--disk-mib <n>', 'disk size in MiB', positiveInteger)
    .option('--cpu <quantity>', `cores: ${CPU_FORMS}`, cpuQuantity, '1')
    .option('--memory-mib <n>', 'memory in MiB', positiveInteger, 1024)
    .option('--wait', 'wait until the create finishes, showing its phase', false)
    .addOption(
      new Option(
        '--sync',
        'use the synchronous route (answers when the sandbox runs or failed; already waits)',
      )
        .default(false)
        .conflicts('wait'),
    )
    .option('--idempotency-key <key>', 'send Idempotency-Key')
    .option('--ttl <duration>', "lifetime from running, e.g. 3600s (default: the template's)")
    .option(
      '-l, --label <key=value>',
      'a label (repeatable): --label team=a --label env=prod',
      collectLabel,
    )
    .action(
      action(
        async (
          s,
          options: {
            template: string;
            diskMib: number;
            cpu: string;
            memoryMib: number;
            wait: boolean;
            sync: boolean;
            idempotencyKey?: string;
            ttl?: string;
            label?: Record<string, string>;
          },
        ) => {
          if (options.label) checkLabels(options.label);
          const body = {
            template: options.template,
            resources: {
              cpu: options.cpu,
              memory_mib: options.memoryMib,
              disk_mib: options.diskMib,
            },
            ...(options.ttl !== undefined && { ttl: options.ttl }),
            ...(options.label && { labels: options.label }),
          };
          // The API replays the first answer to a repeated key (docs/api.md, `Idempotency-Key`).
          // Without --idempotency-key the client makes one key per create, kept on its retries.
          const create = { idempotencyKey: options.idempotencyKey };
          if (options.sync) {
            const spinner = (await s.spinner('creating sandbox (synchronous)')).start();
            try {
              const sandbox = await s.client.createSandboxSync(body, create);
              s.outcome(spinner, true, `sandbox ${sandbox.id} running`);
              s.show(sandbox, formatSandbox);
              return 0;
            } catch (err) {
              spinner.stop();
              if (!(err instanceof DurableSandboxError)) throw err;
              const operationId = err.details.operation_id;
              if (typeof operationId === 'string') s.hint(`operation: ${operationId}`);
              if (err.code !== 'pod_never_ready') throw err;
              return reportApiError(io, err, s.options.apiUrl, SYNC_NEVER_READY_HINT);
            }
          }
          return s.accepted(await s.client.createSandbox(body, create), options.wait);
        },
      ),
    );

  program
    .command('get')
    .description('show a sandbox (sbx_…) or an operation (op_…)')
    .argument('<id>', 'sandbox or operation id')
    .action(
      action(async (s, id: string) => {
        if (id.startsWith('sbx_')) {
          s.show(await s.client.getSandbox(id), formatSandbox);
          return 0;
        }
        if (id.startsWith('op_')) {
          s.show(await s.client.getOperation(id), formatOperation);
          return 0;
        }
        throw new UsageError(
          `get expects a sandbox id (sbx_…) or an operation id (op_…), got "${id}"`,
        );
      }),
    );

  program
    .command('wait')
    .description('wait until an operation finishes, showing its phase')
    .argument('<operation-id>')
    .action(
      action(async (s, id: string) => {
        expectId(id, 'op', 'wait');
        return s.wait(id);
      }),
    );

  program
    .command('cancel')
    .description('cancel a running create: it deletes its pod and ends cancelled')
    .argument('<operation-id>')
    .option('--wait', 'wait until the create has ended', false)
    .action(
      action(async (s, id: string, options: { wait: boolean }) => {
        expectId(id, 'op', 'cancel');
        const operation = await s.client.cancelOperation(id);
        if (!s.json) {
          s.out(`${id}: cancel requested (the create deletes its pod, then ends cancelled)\n`);
        }
        if (options.wait) return s.wait(operation, 'cancelled');
        if (s.json) s.show(operation, formatOperation);
        s.hint(`follow it: ${RUN} wait ${id}`);
        return 0;
      }),
    );

  program
    .command('delete')
    .description('delete a sandbox: its pod is deleted and it ends deleted (202 + operation)')
    .argument('<sandbox-id>')
    .option('--wait', 'wait until the delete finishes', false)
    .action(
      action(async (s, id: string, options: { wait: boolean }) => {
        expectId(id, 'sbx', 'delete');
        let operation;
        try {
          operation = await s.client.deleteSandbox(id);
        } catch (err) {
          // A delete is idempotent for a cleanup script: the sandbox is gone either way.
          if (!(err instanceof DurableSandboxError) || err.code !== 'already_done') throw err;
          if (s.json) s.show({ sandbox_id: id, state: 'deleted', already_deleted: true }, String);
          else s.hint(`${id} is already deleted: nothing to do`);
          return 0;
        }
        return s.accepted(operation, options.wait);
      }),
    );

  program
    .command('extend')
    .description("set a running sandbox's lifetime: --ttl from now, or --expire-time")
    .argument('<sandbox-id>')
    .option('--ttl <duration>', 'new lifetime from now, e.g. 3600s')
    .option('--expire-time <time>', 'new expiry, RFC 3339 (e.g. 2026-12-03T18:00:00Z)')
    .action(
      action(async (s, id: string, options: { ttl?: string; expireTime?: string }) => {
        expectId(id, 'sbx', 'extend');
        if ((options.ttl === undefined) === (options.expireTime === undefined)) {
          throw new UsageError('extend needs exactly one of --ttl and --expire-time');
        }
        const sandbox = await s.client.extendSandbox(
          id,
          options.ttl !== undefined ? { ttl: options.ttl } : { expire_time: options.expireTime },
        );
        if (s.json) s.show(sandbox, formatSandbox);
        else s.out(`${id}: expires at ${sandbox.expire_time}\n`);
        return 0;
      }),
    );

  program
    .command('list')
    .description(
      'list sandboxes (by --state, --template, -l selector, creation time), or failed operations (--failed)',
    )
    .option('--failed', 'list failed operations, newest first', false)
    .addOption(
      new Option('--state <state>', 'only sandboxes in this state').choices(SANDBOX_STATES),
    )
    .option('-l, --selector <selector>', 'a label selector, e.g. "team=a,env in (prod,dev)"')
    .option('--template <name>', 'only sandboxes of this template')
    .option('--created-after <time>', 'only those created at or after this RFC 3339 time')
    .option('--created-before <time>', 'only those created before this RFC 3339 time')
    .option('--show-labels', 'add a LABELS column', false)
    .option('--limit <n>', 'page size (1-200)', positiveInteger, 50)
    .option('--page-token <token>', 'the next page, as the previous page printed it')
    .action(
      action(
        async (
          s,
          options: {
            failed: boolean;
            state?: string;
            selector?: string;
            template?: string;
            createdAfter?: string;
            createdBefore?: string;
            showLabels: boolean;
            limit: number;
            pageToken?: string;
          },
        ) => {
          const query = {
            limit: options.limit,
            pageToken: options.pageToken || undefined,
            createTimeAfter: options.createdAfter,
            createTimeBefore: options.createdBefore,
          };
          let page: { next_page_token: string | null };
          if (options.failed) {
            if (options.selector !== undefined || options.template !== undefined) {
              throw new UsageError('--failed lists operations: -l and --template filter sandboxes');
            }
            const body = await s.client.listOperations({ ...query, status: 'failed' });
            s.show(body, () => formatOperationList(body.operations, s.table()));
            page = body;
          } else {
            // commander has checked the state against SANDBOX_STATES (.choices).
            const state = options.state as SandboxState | undefined;
            const body = await s.client.listSandboxes({
              ...query,
              state,
              template: options.template,
              labelSelector: options.selector,
            });
            const table = { ...s.table(), showLabels: options.showLabels };
            s.show(body, () => formatSandboxList(body.sandboxes, table));
            page = body;
          }
          if (page.next_page_token) {
            const quote = (text: string) => (/^[\w.:=,/-]+$/.test(text) ? text : `'${text}'`);
            const args = [
              'list',
              ...(options.failed ? ['--failed'] : []),
              ...(options.state ? ['--state', options.state] : []),
              ...(options.selector !== undefined ? ['-l', quote(options.selector)] : []),
              ...(options.template ? ['--template', options.template] : []),
              ...(options.createdAfter ? ['--created-after', options.createdAfter] : []),
              ...(options.createdBefore ? ['--created-before', options.createdBefore] : []),
              ...(options.showLabels ? ['--show-labels'] : []),
              '--limit',
              String(options.limit),
              '--page-token',
              page.next_page_token,
            ];
            s.hint(`More results: ${RUN} ${args.join(' ')}`);
          }
          return 0;
        },
      ),
    );

  program
    .command('label')
    .description(
      "set (key=value) or remove (key-) a sandbox's labels, as kubectl label does; any state",
    )
    .argument('<sandbox-id>')
    .argument('[labels...]', 'key=value to set, key- to remove')
    .option('--overwrite', 'allow changing the value of a label the sandbox already has', false)
    .option('--list', "print the sandbox's labels, one key=value a line", false)
    .action(
      action(
        async (s, id: string, args: string[], options: { overwrite: boolean; list: boolean }) => {
          expectId(id, 'sbx', 'label');
          if (options.list) {
            if (args.length > 0) throw new UsageError('label --list takes no key=value or key-');
            const sandbox = await s.client.getSandbox(id);
            s.show(sandbox.labels, (labels) =>
              Object.keys(labels)
                .sort()
                .map((key) => `${key}=${labels[key]}\n`)
                .join(''),
            );
            return 0;
          }
          if (args.length === 0) throw new UsageError('label needs at least one key=value or key-');
          const { set, remove } = parseLabelArguments(args);
          // kubectl's rule: a label that has another value changes only with --overwrite.
          const current = (await s.client.getSandbox(id)).labels;
          if (!options.overwrite) {
            const changed = Object.keys(set).find(
              (key) => Object.hasOwn(current, key) && current[key] !== set[key],
            );
            if (changed !== undefined) {
              throw new UsageError(
                `'${changed}' already has a value (${current[changed]}), and --overwrite is false`,
              );
            }
          }
          for (const key of remove.filter((key) => !Object.hasOwn(current, key))) {
            s.hint(`label "${key}" not found.`);
          }
          // Only the named keys change (update_mask labels.<key>): a concurrent change of
          // another key is kept.
          const sandbox = await s.client.updateSandboxLabels(id, set, {
            keys: [...Object.keys(set), ...remove],
          });
          if (s.json) s.show(sandbox, formatSandbox);
          else s.out(`${id} labeled: ${formatLabels(sandbox.labels)}\n`);
          return 0;
        },
      ),
    );

  program
    .command('trace')
    .description("print an operation's trace as a tree (spans kept by npm start)")
    .argument('<operation-id>')
    .action(
      action(async (s, id: string) => {
        expectId(id, 'op', 'trace');
        const operation = await s.client.getOperation(id);
        if (!operation.trace_id) {
          s.error('no_trace', `${id} has no trace: traces were off when it was created`);
          s.hint('Turn them on as docs/observability.md says.');
          return FAILED;
        }
        let spans;
        try {
          spans = await s.client.getTrace(operation.trace_id);
        } catch (err) {
          if (!(err instanceof DurableSandboxError) || err.status !== 404) throw err;
          s.error('no_spans', missingTraceMessage(operation.trace_id, err.message));
          return FAILED;
        }
        s.show({ trace_id: operation.trace_id, spans }, () => formatTraceTree(spans));
        return 0;
      }),
    );

  program
    .command('templates')
    .argument('[name]', 'one template')
    .description('list the templates: image and rootfs floor (declared, learned or unknown)')
    .action(
      action(async (s, name?: string) => {
        if (name) {
          const body = await s.client.getTemplate(name);
          s.show(body, () => formatTemplateList([body], s.table()));
          return 0;
        }
        const body = { templates: await s.client.listTemplates() };
        s.show(body, () => formatTemplateList(body.templates, s.table()));
        return 0;
      }),
    );

  program
    .command('quota')
    .description("show your tenant's limits and what it uses of them")
    .action(
      action(async (s) => {
        const body = await s.client.getQuota();
        s.show(body, () => formatQuota(body, s.table()));
        return 0;
      }),
    );

  addWebhookCommands(program, action);
  addEventCommands(program, action);

  // A usage error names the problem and where the help is, without printing the whole help.
  for (const command of [program, ...program.commands]) {
    const name = command === program ? RUN : `${RUN} ${command.name()}`;
    command.showHelpAfterError(`See '${name} --help' for usage.`);
  }

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : USAGE;
    }
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\n`);
      return USAGE;
    }
    if (err instanceof RequestAbortedError) {
      io.stderr.write('interrupted\n');
      return interruptedExitCode(io.signal);
    }
    if (err instanceof DurableSandboxError) {
      return reportApiError(io, err, program.opts<GlobalOptions>().apiUrl);
    }
    io.stderr.write(`error: internal: ${(err as Error)?.message ?? String(err)}\n`);
    return FAILED;
  }
}
