/**
 * The `durable-sandbox` command (package.json `bin`, also `npm run cli --`): the command-line
 * client of the API (see clients/cli/program.ts). API from `--api-url` or DURABLE_SANDBOX_URL, token
 * from `--token` or DURABLE_SANDBOX_TOKEN.
 *
 * Ctrl-C (SIGINT) and SIGTERM abort what the command is doing (a wait says the operation goes on
 * and exits 130, or 143 after SIGTERM); a second signal exits at once.
 */
import { run } from './program.js';

// A reader that went away (`durable-sandbox list | head -1`) ends the output quietly, as for any
// Unix command, instead of crashing with an unhandled EPIPE and its stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  });
}

const interrupt = new AbortController();
for (const [name, exitCode] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(name, () => {
    if (interrupt.signal.aborted) process.exit(exitCode);
    interrupt.abort(name);
  });
}

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
});
