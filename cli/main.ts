/**
 * The `durable-sandbox` command (package.json `bin`, also `npm run cli --`): the command-line
 * client of the API (see cli/program.ts). API from `--api-url` or DURABLE_SANDBOX_URL, token
 * from `--token` or DURABLE_SANDBOX_TOKEN.
 *
 * Ctrl-C (SIGINT) aborts what the command is doing (a wait says the operation goes on and exits
 * 130); a second Ctrl-C exits at once.
 */
import { run } from './program.js';

const interrupt = new AbortController();
process.on('SIGINT', () => {
  if (interrupt.signal.aborted) process.exit(130);
  interrupt.abort();
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
});
