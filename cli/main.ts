/**
 * `npm run cli -- <command>`: the command-line client of the API (see cli/program.ts).
 * API from `--api-url` or DURABLE_SANDBOX_URL, token from `--token` or DURABLE_SANDBOX_TOKEN.
 */
import { run } from './program.js';

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
