/**
 * End to end as a user runs it: `npm start` as a child process in its own process group (its
 * own Temporal dev server with a DB file, the simulated cluster, SQLite, the worker and the API,
 * on free ports), driven through the CLI as a child process; then a Ctrl-C (SIGINT to the
 * group, as a terminal sends it) stops everything it started and removes its stack.pid.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStackProcess, type StackProcess } from './support/stack-process.js';
import { waitUntil } from '../tools/wait-until.js';

let stack: StackProcess;
let output = '';
let apiUrl: string;
let temporalAddress: string;
const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-e2e-'));

beforeAll(async () => {
  // LOG_LEVEL=info: the stopping line is an info line.
  stack = await startStackProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'info' }, true, {
    viaNpm: true,
  });
  apiUrl = stack.apiUrl;
  output = stack.output();
  temporalAddress = /Temporal:\s+(\S+),/.exec(output)?.[1] ?? '';
}, 300_000);

afterAll(() => {
  if (stack?.child.exitCode === null) stack.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Runs the CLI as a process against the stack; resolves with its exit code and output. */
function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'clients/cli/main.ts', ...args], {
      env: { ...process.env, DURABLE_SANDBOX_URL: apiUrl, DURABLE_SANDBOX_TOKEN: 'dev-token' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm start, driven through the CLI', () => {
  it('prints the API, the dev token, the Temporal UI, the kubeconfig and an example', () => {
    expect(output).toContain(`API:          ${apiUrl}`);
    expect(output).toContain('token: dev-token');
    expect(output).toMatch(/Temporal UI:\s+http:\/\/127\.0\.0\.1:\d+/);
    // Plain kubectl would talk to :8080 (our API): the banner says what to export.
    expect(output).toContain(
      `export KUBECONFIG=${join(dataDir, 'kubeconfig')}; kubectl get pods,events`,
    );
    expect(output).toContain(`curl -s -X POST ${apiUrl}/v1/sandboxes`);
    // The stack runs on a free PORT, not the CLI's default: the CLI line names it too.
    expect(output).toContain(
      `or with the CLI: DURABLE_SANDBOX_URL=${apiUrl} npx durable-sandbox create --template base`,
    );
  });

  it("runs with a shared installation's tenant limits when TENANT_LIMITS is unset", async () => {
    const quota = await fetch(`${apiUrl}/v1/quota`, {
      headers: { Authorization: 'Bearer dev-token' },
    });
    expect(quota.status).toBe(200);
    expect(((await quota.json()) as { limits: unknown }).limits).toEqual({
      sandboxes: 20,
      cpu: 40,
      memory_mib: 81920,
      disk_mib: 409600,
      creates_per_second: 5,
      create_burst: 10,
      waits: 100,
    });
  });

  it('fails a disk-300 create with invalid_request naming 451 MiB (exit 1)', async () => {
    const result = await cli('create', '--template', 'base', '--disk-mib', '300', '--wait');
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/invalid_request: .*cloned rootfs size 451 MiB/);
  });

  it('creates a running sandbox for disk 2048 (exit 0)', async () => {
    const result = await cli(
      '--json',
      'create',
      '--template',
      'base',
      '--disk-mib',
      '2048',
      '--wait',
    );
    expect(result.code, result.stderr).toBe(0);
    const operation = JSON.parse(result.stdout) as {
      status: string;
      result: { sandbox: { state: string; pod: { ip: string } } };
    };
    expect(operation.status).toBe('succeeded');
    expect(operation.result.sandbox).toMatchObject({
      state: 'running',
      pod: { ip: expect.any(String) },
    });
  });

  it('writes a kubeconfig whose context namespace is sandboxes (kubectl get pods needs no -n)', () => {
    const kubeconfig = new KubeConfig();
    kubeconfig.loadFromString(readFileSync(join(dataDir, 'kubeconfig'), 'utf8'));
    expect(kubeconfig.getContextObject(kubeconfig.getCurrentContext())?.namespace).toBe(
      'sandboxes',
    );
  });

  it('serves each metric family on one endpoint only; process metrics once', async () => {
    const workerUrl = /Metrics:.*, (http:\/\/127\.0\.0\.1:\d+\/metrics) \(worker\)/.exec(
      output,
    )?.[1];
    expect(workerUrl, output).toBeDefined();
    const families = async (url: string) =>
      new Set(
        [...(await (await fetch(url)).text()).matchAll(/^# TYPE (\w+) /gm)].map(
          (match) => match[1] as string,
        ),
      );
    const api = await families(`${apiUrl}/metrics`);
    const worker = await families(workerUrl!);
    expect([...api].filter((name) => worker.has(name))).toEqual([]);
    expect(api).toContain('durable_sandbox_creates_started_total');
    expect(worker).toContain('durable_sandbox_creates_finished_total');
    expect(api).toContain('process_resident_memory_bytes');
    expect(api).toContain('nodejs_eventloop_lag_seconds');
  });

  it('links an operation to its Temporal UI page and answers with X-Request-Id', async () => {
    const created = await fetch(`${apiUrl}/v1/sandboxes`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer dev-token',
        'content-type': 'application/json',
        'x-request-id': 'e2e-request-1',
      },
      body: JSON.stringify({
        template: 'base',
        resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
      }),
    });
    expect(created.headers.get('x-request-id')).toBe('e2e-request-1');
    const operation = (await created.json()) as { id: string; temporal_ui_url: string };
    const ui = /Temporal UI:\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
    expect(operation.temporal_ui_url).toMatch(
      new RegExp(`^${ui}/namespaces/default/workflows/${operation.id}/[0-9a-f-]+/history$`),
    );
  });

  it('stops everything it started on a Ctrl-C, saying so at once, and removes stack.pid', async () => {
    const pidFile = join(dataDir, 'stack.pid');
    const stackPid = Number(readFileSync(pidFile, 'utf8'));
    const running = () => {
      try {
        process.kill(stackPid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(running(), 'stack.pid names the running stack').toBe(true);
    // A busy stack, as when a person presses Ctrl-C: creates accepted and running.
    const accepted = await Promise.all(
      Array.from({ length: 8 }, () =>
        fetch(`${apiUrl}/v1/sandboxes`, {
          method: 'POST',
          headers: { Authorization: 'Bearer dev-token', 'Content-Type': 'application/json' },
          body: JSON.stringify({
            template: 'base',
            resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
          }),
        }).then((response) => response.status),
      ),
    );
    expect(accepted.every((status) => status === 202)).toBe(true);
    const interrupted = Date.now();
    // npm itself ends on the SIGINT as in a terminal (exit 130); the stack goes on stopping.
    void stack.interrupt();
    await waitUntil(() => /"msg":"stopping: /.test(stack.output()), { timeoutMs: 10_000 });
    const said = Date.now() - interrupted;
    await waitUntil(() => !running(), { timeoutMs: 60_000 });
    expect(said, 'ms from the Ctrl-C to the stopping line').toBeLessThan(10_000);
    // One stop (the terminal's SIGINT and npm's forwarded one are one Ctrl-C), a clean one.
    expect(stack.output().match(/"msg":"stopping: /g)).toHaveLength(1);
    expect(stack.output()).not.toContain('stopped at once');
    expect(existsSync(pidFile), `stack.pid left behind:\n${stack.output()}`).toBe(false);
    // Its dev server is gone: the frontend no longer answers.
    await expect(
      Connection.connect({ address: temporalAddress, connectTimeout: 2_000 }),
    ).rejects.toThrow();
    await expect(fetch(`${apiUrl}/healthz`)).rejects.toThrow();
  }, 120_000);
});
