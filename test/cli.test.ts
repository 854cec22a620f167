/**
 * The command-line client against the real API (listening on a free port) over a real dev
 * server, a worker, the simulated cluster and a SQLite store.
 */
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../cli/program.js';
import { pollDelayMs } from '../cli/wait.js';
import { eventually, startApiStack, type ApiStack } from './support/api.js';

let api: ApiStack;
let url: string;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
  ({ url } = await api.listen());
});
afterAll(async () => {
  await api?.stop();
});

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/** Runs the CLI in process as tenant A against the test API. */
async function cli(...args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(args, {
    stdout,
    stderr,
    env: { DURABLE_SANDBOX_URL: url, DURABLE_SANDBOX_TOKEN: api.tenantA.token },
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('cli', () => {
  it('create --wait exits 0 and prints the running sandbox', async () => {
    const result = await cli('create', '--template', 'base', '--disk-mib', '2048', '--wait');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/status\s+succeeded/);
    expect(result.stdout).toMatch(/state\s+running/);
    expect(result.stdout).toMatch(/ip=\d+\.\d+\.\d+\.\d+/);
  });

  it('create --wait exits 1 with invalid_request naming 451 MiB when the node refuses the disk', async () => {
    const result = await cli('create', '--disk-mib', '300', '--wait');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: invalid_request: .*451 MiB$/m);
    expect(result.stdout).toMatch(/status\s+failed/);
  });

  it('--json prints only the operation as JSON', async () => {
    const result = await cli('--json', 'create', '--disk-mib', '2048', '--wait');
    expect(result.code, result.stderr).toBe(0);
    const operation = JSON.parse(result.stdout);
    expect(operation).toMatchObject({
      status: 'succeeded',
      result: { sandbox: { state: 'running' } },
    });
    expect(result.stderr).toBe('');
  });

  it('create --sync prints the sandbox, or the node refusal', async () => {
    const ok = await cli('--json', 'create', '--disk-mib', '2048', '--sync');
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ state: 'running' });
    const refused = await cli('create', '--disk-mib', '300', '--sync');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error: invalid_request: .*451 MiB/);
  });

  it('create, get, wait, cancel and list work on ids of the API', async () => {
    const created = await cli('--json', 'create', '--disk-mib', '300');
    expect(created.code, created.stderr).toBe(0);
    const operation = JSON.parse(created.stdout) as { id: string; sandbox_id: string };

    const waited = await cli('--json', 'wait', operation.id);
    expect(waited.code).toBe(1);
    expect(JSON.parse(waited.stdout)).toMatchObject({ id: operation.id, status: 'failed' });

    const op = await cli('get', operation.id);
    expect(op.code).toBe(0);
    expect(op.stdout).toContain(operation.id);
    const sandbox = await cli('--json', 'get', operation.sandbox_id);
    expect(JSON.parse(sandbox.stdout)).toMatchObject({ id: operation.sandbox_id, state: 'failed' });

    const cancel = await cli('cancel', operation.id);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(/^error: already_done: /);

    const sandboxes = await cli('list', '--state', 'failed');
    expect(sandboxes.code).toBe(0);
    expect(sandboxes.stdout).toContain(operation.sandbox_id);
    const failed = await eventually(
      async () => {
        const listed = await cli('--json', 'list', '--failed');
        const ids = (JSON.parse(listed.stdout).operations as Array<{ id: string }>).map(
          (o) => o.id,
        );
        return ids.includes(operation.id) ? ids : undefined;
      },
      { what: 'the failed operation listed' },
    );
    expect(failed).toContain(operation.id);
  });

  it('deletes a running sandbox with delete --wait', async () => {
    const created = await cli('--json', 'create', '--disk-mib', '2048', '--wait');
    expect(created.code, created.stderr).toBe(0);
    const sandboxId = (JSON.parse(created.stdout) as { sandbox_id: string }).sandbox_id;
    const deleted = await cli('delete', sandboxId, '--wait');
    expect(deleted.code, deleted.stderr).toBe(0);
    // Not a terminal here: plain progress lines, no colour codes.
    expect(deleted.stderr).not.toContain('\u001b[');
    const sandbox = await cli('--json', 'get', sandboxId);
    expect(JSON.parse(sandbox.stdout)).toMatchObject({ id: sandboxId, state: 'deleted' });
  });

  it('prints the API error for a bad token, an unknown id, an unreachable API and bad usage', async () => {
    const badToken = await cli('--token', 'nope', 'list');
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/^error: unauthenticated: /);
    const unknown = await cli('get', 'sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    expect(unknown.stderr).toMatch(/^error: not_found: /);
    const unreachable = await cli('--api-url', 'http://127.0.0.1:1', 'list');
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: unavailable: cannot reach/);
    const usage = await cli('create');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--disk-mib');
    const notAnId = await cli('get', 'banana');
    expect(notAnId.code).toBe(2);
  });

  it('polls at the pace of Retry-After, never faster than every 500 ms', () => {
    expect(pollDelayMs('1')).toBe(1000);
    expect(pollDelayMs('0')).toBe(500);
    expect(pollDelayMs(null)).toBe(500);
    expect(pollDelayMs('soon')).toBe(500);
  });

  it('runs as a process: npm run cli exits 1 with invalid_request on stderr', async () => {
    const main = fileURLToPath(new URL('../cli/main.ts', import.meta.url));
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        main,
        '--api-url',
        url,
        '--token',
        api.tenantA.token,
        'create',
        '--disk-mib',
        '300',
        '--wait',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/error: invalid_request: .*451 MiB/);
    expect(stdout).toMatch(/status\s+failed/);
  });
});
