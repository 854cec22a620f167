/**
 * The `durable-sandbox` command line (commander): create, get, wait, cancel, list. `run(argv)`
 * is the whole program, so tests call it in process; cli/main.ts wires it to the process.
 *
 * Exit codes: 0 success, 1 a failed operation or an API error, 2 a usage error.
 * Errors print `error: <code>: <message>` on stderr; `--json` prints only JSON on stdout.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import ora, { type Ora } from 'ora';
import { ApiCallError, ApiClient } from './api-client.js';
import {
  formatOperation,
  formatOperationList,
  formatSandbox,
  formatSandboxList,
} from './format.js';
import type { Operation, Sandbox } from './types.js';
import { waitForOperation } from './wait.js';

/** The API used when neither `--api-url` nor DURABLE_SANDBOX_URL is given. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';
/** The token used when neither `--token` nor DURABLE_SANDBOX_TOKEN is given (the dev token). */
export const DEFAULT_TOKEN = 'dev-token';

/** Where the program reads and writes; the process by default. */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
}

interface GlobalOptions {
  apiUrl: string;
  token: string;
  json: boolean;
}

/** Exit code of a run that failed (operation failed, API error). */
const FAILED = 1;
/** Exit code of a usage error. */
const USAGE = 2;

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) <= 0) {
    throw new InvalidArgumentError('must be a positive integer');
  }
  return Number(value);
}

/** Runs one command; resolves to its exit code. */
class Session {
  readonly client: ApiClient;

  constructor(
    readonly io: CliIo,
    readonly options: GlobalOptions,
  ) {
    this.client = new ApiClient({ baseUrl: options.apiUrl, token: options.token, fetch: io.fetch });
  }

  out(text: string): void {
    this.io.stdout.write(text);
  }

  /** Prints `value` as JSON (with --json) or with the human formatter. */
  show<T>(value: T, human: (value: T) => string): void {
    this.out(this.options.json ? `${JSON.stringify(value, null, 2)}\n` : human(value));
  }

  error(code: string, message: string): void {
    this.io.stderr.write(`error: ${code}: ${message}\n`);
  }

  /** A spinner on stderr; silent with --json. */
  spinner(text: string): Ora {
    return ora({ text, stream: this.io.stderr, isSilent: this.options.json });
  }

  /** Prints a finished operation; 0 when it succeeded. */
  finished(operation: Operation): number {
    this.show(operation, formatOperation);
    if (operation.status === 'succeeded') return 0;
    const error = operation.error ?? {
      code: operation.status,
      message: `operation ${operation.status}`,
    };
    this.error(error.code, error.message);
    return FAILED;
  }

  /** An operation the API accepted: printed as is, or waited for with `--wait`. */
  async accepted(operation: Operation, wait: boolean): Promise<number> {
    if (wait) return this.wait(operation.id);
    this.show(operation, formatOperation);
    return 0;
  }

  /** Polls the operation with a spinner showing its phase until it is done. */
  async wait(operationId: string): Promise<number> {
    const spinner = this.spinner(`${operationId}: waiting`).start();
    let lastPhase = '';
    const started = Date.now();
    const operation = await waitForOperation(this.client, operationId, (current) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      spinner.text = `${operationId}: ${current.phase} (${seconds} s)`;
      if (current.phase !== lastPhase && !spinner.isEnabled && !this.options.json) {
        this.io.stderr.write(`- ${operationId}: ${current.phase}\n`);
      }
      lastPhase = current.phase;
    }).catch((err: unknown) => {
      spinner.stop();
      throw err;
    });
    if (!spinner.isEnabled) {
      // Not a terminal: plain lines, no symbols or colour codes.
      spinner.stop();
      if (!this.options.json) this.io.stderr.write(`- ${operationId}: ${operation.status}\n`);
    } else if (operation.status === 'succeeded') spinner.succeed(`${operationId}: succeeded`);
    else spinner.fail(`${operationId}: ${operation.status}`);
    return this.finished(operation);
  }
}

/**
 * Runs the CLI.
 * @param argv the arguments after the program name, e.g. `['create', '--disk-mib', '2048']`
 * @returns the exit code (never throws; errors are printed on `io.stderr`)
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const program = new Command('durable-sandbox')
    .description('Create and inspect sandboxes through the durable-sandbox API.')
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
    .option('--json', 'print machine-readable JSON only', false)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError();

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
    .option('--cpu <n>', 'cores', positiveInteger, 1)
    .option('--memory-mib <n>', 'memory in MiB', positiveInteger, 1024)
    .option('--wait', 'wait until the create finishes, showing its phase', false)
    .option('--sync', 'use the synchronous route (answers when the sandbox runs or failed)', false)
    .option('--idempotency-key <key>', 'send Idempotency-Key')
    .action(
      action(
        async (
          s,
          options: {
            template: string;
            diskMib: number;
            cpu: number;
            memoryMib: number;
            wait: boolean;
            sync: boolean;
            idempotencyKey?: string;
          },
        ) => {
          const body = {
            template: options.template,
            resources: {
              cpu: options.cpu,
              memory_mib: options.memoryMib,
              disk_mib: options.diskMib,
            },
          };
          if (options.sync) {
            const spinner = s.spinner('creating sandbox (synchronous)').start();
            try {
              const response = await s.client.call<Sandbox>('POST', '/sync/v1/sandboxes', body);
              spinner.succeed(`sandbox ${response.body.id} running`);
              s.show(response.body, formatSandbox);
              return 0;
            } catch (err) {
              spinner.fail('create failed');
              const operationId =
                err instanceof ApiCallError ? err.details.operation_id : undefined;
              if (typeof operationId === 'string') s.io.stderr.write(`operation: ${operationId}\n`);
              throw err;
            }
          }
          const response = await s.client.call<Operation>('POST', '/v1/sandboxes', body);
          return s.accepted(response.body, options.wait);
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
          s.show(
            (await s.client.call<Sandbox>('GET', `/v1/sandboxes/${encodeURIComponent(id)}`)).body,
            formatSandbox,
          );
          return 0;
        }
        if (id.startsWith('op_')) {
          s.show(
            (await s.client.call<Operation>('GET', `/v1/operations/${encodeURIComponent(id)}`))
              .body,
            formatOperation,
          );
          return 0;
        }
        s.error(
          'invalid_request',
          `${id} is neither a sandbox id (sbx_…) nor an operation id (op_…)`,
        );
        return USAGE;
      }),
    );

  program
    .command('wait')
    .description('wait until an operation finishes, showing its phase')
    .argument('<operation-id>')
    .action(action(async (s, id: string) => s.wait(id)));

  program
    .command('cancel')
    .description('cancel a running create')
    .argument('<operation-id>')
    .action(
      action(async (s, id: string) => {
        const response = await s.client.call<Operation>(
          'POST',
          `/v1/operations/${encodeURIComponent(id)}/cancel`,
        );
        s.show(response.body, formatOperation);
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
        const response = await s.client.call<Operation>(
          'DELETE',
          `/v1/sandboxes/${encodeURIComponent(id)}`,
        );
        return s.accepted(response.body, options.wait);
      }),
    );

  program
    .command('list')
    .description('list sandboxes (by --state), or failed operations (--failed)')
    .option('--failed', 'list failed operations, newest first', false)
    .option('--state <state>', 'only sandboxes in this state (creating, running, failed, deleted)')
    .option('--limit <n>', 'page size (1-200)', positiveInteger, 50)
    .action(
      action(async (s, options: { failed: boolean; state?: string; limit: number }) => {
        if (options.failed) {
          const query = new URLSearchParams({ status: 'failed', limit: String(options.limit) });
          const page = await s.client.call<{ operations: Operation[] }>(
            'GET',
            `/v1/operations?${query}`,
          );
          s.show(page.body, (body) => formatOperationList(body.operations));
          return 0;
        }
        const query = new URLSearchParams({ limit: String(options.limit) });
        if (options.state) query.set('state', options.state);
        const page = await s.client.call<{ sandboxes: Sandbox[] }>('GET', `/v1/sandboxes?${query}`);
        s.show(page.body, (body) => formatSandboxList(body.sandboxes));
        return 0;
      }),
    );

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : USAGE;
    }
    if (err instanceof ApiCallError) {
      io.stderr.write(`error: ${err.code}: ${err.message}\n`);
      return FAILED;
    }
    io.stderr.write(`error: internal: ${(err as Error)?.message ?? String(err)}\n`);
    return FAILED;
  }
}
