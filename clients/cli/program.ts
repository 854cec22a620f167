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
import { Command, CommanderError, Option } from 'commander';
import { DurableSandboxError, RequestAbortedError } from '../typescript/src/index.js';
import { addEventCommands } from './events.js';
import { addWebhookCommands } from './webhook-commands.js';
import {
  PROGRAM,
  RUN,
  type CliIo,
  type GlobalOptions,
  FAILED,
  USAGE,
  interruptedExitCode,
  UsageError,
  reportApiError,
  Session,
} from './session.js';
import { addCreateCommand } from './create-command.js';
import { addOperationCommands, addSandboxCommands } from './sandbox-commands.js';
import { addListCommand } from './list-command.js';
import { addLabelCommand } from './label-command.js';
import { addInfoCommands } from './info-commands.js';

/** The API used when neither `--api-url` nor DURABLE_SANDBOX_URL is given. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';
/** The token used when neither `--token` nor DURABLE_SANDBOX_TOKEN is given (the dev token). */
export const DEFAULT_TOKEN = 'dev-token';

function packageVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
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

  addCreateCommand(program, action);
  addOperationCommands(program, action);
  addSandboxCommands(program, action);
  addListCommand(program, action);
  addLabelCommand(program, action);
  addInfoCommands(program, action);
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
