/**
 * The typed client (clients/typescript/, `@durable-sandbox/client`) against the real API (listening on a
 * free port) over a real dev server, a worker, the simulated cluster and a SQLite store: its
 * create-and-wait, its typed errors, its idempotency key kept across a retry, and its generated
 * types against the OpenAPI document the API serves.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { ApiErrorCode } from '../src/api/errors.js';
import { generateTypes, SCHEMA_FILE } from '../clients/typescript/scripts/generate-types.js';
import {
  DurableSandboxClient,
  DurableSandboxError,
  RequestAbortedError,
  type ErrorCode,
  type Operation,
} from '../clients/typescript/src/index.js';
import { startApiStack, type ApiStack } from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

let api: ApiStack;
let url: string;
beforeAll(async () => {
  api = await startApiStack({
    // The node refuses disk 300 each time (no floor learned that would refuse it up front).
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
  });
  ({ url } = await api.listen());
});
afterAll(async () => {
  await api?.stop();
});

/** A client of tenant A; `fetch` sees every request it sends. */
function clientOf(fetch?: (request: Request) => Promise<Response>) {
  return new DurableSandboxClient({ baseUrl: url, token: api.tenantA.token, fetch });
}

const RESOURCES = { cpu: '500m', memory_mib: 1024 } as const;

/** Runs a command; resolves with its exit code and output. */
function runProcess(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
}

describe('client', () => {
  it('createSandboxAndWait returns the create succeeded, its sandbox running with an IP', async () => {
    const phases: string[] = [];
    const operation = await clientOf().createSandboxAndWait(
      { template: 'base', resources: { ...RESOURCES, disk_mib: 2048 } },
      { onUpdate: (op) => phases.push(op.phase) },
    );
    expect(operation).toMatchObject({
      type: 'sandbox.create',
      status: 'succeeded',
      done: true,
      result: { sandbox: { state: 'running' } },
    });
    expect(operation.result?.sandbox.pod.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(phases.at(-1)).toBe('finished');
    const sandbox = await clientOf().getSandbox(operation.sandbox_id);
    expect(sandbox.state).toBe('running');
  });

  it('a create the node refuses throws DurableSandboxError invalid_request naming 451 MiB', async () => {
    const refused = await clientOf()
      .createSandboxSync({ template: 'base', resources: { ...RESOURCES, disk_mib: 300 } })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(DurableSandboxError);
    const error = refused as DurableSandboxError;
    expect(error.code).toBe('invalid_request');
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/451 MiB/);
    expect(error.details.operation_id).toMatch(/^op_/);
    expect(error.requestId).toBeTruthy();
    // A body the API refuses before anything starts: the same typed error.
    const invalid = await clientOf()
      .createSandbox({ template: 'nope', resources: { ...RESOURCES, disk_mib: 2048 } })
      .catch((err: unknown) => err);
    expect(invalid).toMatchObject({ name: 'DurableSandboxError', code: 'invalid_request' });
  });

  it('a create retried after its answer was lost reuses its idempotency key: the same operation', async () => {
    const keys: string[] = [];
    let firstAnswer: Operation | undefined;
    const client = clientOf(async (request) => {
      if (request.method !== 'POST') return fetch(request);
      keys.push(request.headers.get('idempotency-key') ?? '(none)');
      const response = await fetch(request);
      if (firstAnswer !== undefined) return response;
      // The API created it; the answer is lost on the way back (a reset connection).
      firstAnswer = (await response.json()) as Operation;
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
    });
    const operation = await client.createSandbox({
      template: 'base',
      resources: { ...RESOURCES, disk_mib: 2048 },
    });
    expect(operation.id, 'the retry answered the first create, not a second one').toBe(
      firstAnswer?.id,
    );
    expect(operation.sandbox_id).toBe(firstAnswer?.sandbox_id);
    // Because both tries sent one key: a random UUID.
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(keys[1]).toBe(keys[0]);
    // Another logical create is another key, so another operation.
    const next = await client.createSandbox({
      template: 'base',
      resources: { ...RESOURCES, disk_mib: 2048 },
    });
    expect(keys[2]).not.toBe(keys[0]);
    expect(next.id).not.toBe(operation.id);
    for (const op of [operation, next]) await client.cancelOperation(op.id).catch(() => undefined);
  });

  it('an aborted wait throws RequestAbortedError with the reason; the create goes on', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const client = clientOf();
      const operation = await client.createSandbox({
        template: 'base',
        resources: { ...RESOURCES, disk_mib: 2048 },
      });
      const stop = new AbortController();
      const waiting = client.waitForOperation(operation.id, { signal: stop.signal });
      let abortedAtMs = 0;
      setTimeout(() => {
        abortedAtMs = Date.now();
        stop.abort('enough');
      }, 1_000);
      const error = await waiting.catch((err: unknown) => err);
      // At once, not when the 30 s long-poll in flight answers.
      expect(Date.now() - abortedAtMs).toBeLessThan(2_000);
      expect(error).toBeInstanceOf(RequestAbortedError);
      expect((error as RequestAbortedError).reason).toBe('enough');
      expect(await client.getOperation(operation.id)).toMatchObject({
        status: 'running',
        done: false,
      });
      await client.cancelOperation(operation.id);
      expect(await client.waitForOperation(operation.id)).toMatchObject({ status: 'cancelled' });
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('a wait sends the ETag it last saw as If-None-Match and goes on after a 304', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      // What the API saw and answered for each read of the operation. The long-polls' wait is
      // cut to 1 s on the way out, so one ends at its timeout (304) within the test.
      const reads: Array<{ ifNoneMatch: string | null; status: number; etag: string | null }> = [];
      const client = clientOf(async (request) => {
        const path = new URL(request.url).pathname;
        if (request.method !== 'GET' || !path.startsWith('/v1/operations/op_')) {
          return fetch(request);
        }
        const response = await fetch(
          new Request(request.url.replace('wait=30s', 'wait=1s'), request),
        );
        reads.push({
          ifNoneMatch: request.headers.get('if-none-match'),
          status: response.status,
          etag: response.headers.get('etag'),
        });
        return response;
      });
      const operation = await client.createSandbox({
        template: 'base',
        resources: { ...RESOURCES, disk_mib: 2048 },
      });
      const updates: Operation[] = [];
      const waiting = client.waitForOperation(operation.id, {
        onUpdate: (current) => updates.push(current),
      });
      await waitUntil(() => reads.some((read) => read.status === 304), {
        what: 'a long-poll answered 304',
        timeoutMs: 60_000,
      });
      await client.cancelOperation(operation.id);
      expect(await waiting).toMatchObject({ status: 'cancelled', done: true });
      expect(reads[0]?.ifNoneMatch).toBeNull();
      for (const [i, read] of reads.entries()) {
        if (i > 0) expect(read.ifNoneMatch, `read ${i}`).toBe(reads[i - 1]?.etag);
        expect(read.etag, `read ${i}`).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
      }
      // A 304 hands on the operation as last seen, still running.
      const notModified = reads.findIndex((read) => read.status === 304);
      expect(updates[notModified]).toEqual(updates[notModified - 1]);
      expect(updates[notModified]?.done).toBe(false);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('an API that cannot be reached is unavailable (status 0), after the retries of a read', async () => {
    let tries = 0;
    const client = new DurableSandboxClient({
      baseUrl: 'http://127.0.0.1:1',
      token: api.tenantA.token,
      fetch: (request) => {
        tries++;
        return fetch(request);
      },
    });
    const error = await client.listSandboxes().catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'unavailable', status: 0 });
    expect((error as Error).message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:1: /);
    expect(tries).toBe(3);
  });

  it('its generated types are those openapi-typescript makes of the /openapi.json the API serves', async () => {
    const response = await fetch(`${url}/openapi.json`);
    expect(response.status).toBe(200);
    const generated = await generateTypes((await response.json()) as object);
    const checkedIn = await readFile(SCHEMA_FILE, 'utf8');
    expect(
      generated === checkedIn,
      'clients/typescript/src/schema.ts differs from the types of the served OpenAPI document: run `npm run client:types`',
    ).toBe(true);
    // Its error codes are the API's (src/api/errors.ts: its own and contract/operation.ts's).
    expectTypeOf<ErrorCode>().toEqualTypeOf<ApiErrorCode>();
  });

  it('builds as a package (JavaScript and declarations) whose client calls the API', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'durable-sandbox-client-'));
    try {
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
      const build = await runProcess(
        [tsc, '-p', 'clients/typescript/tsconfig.build.json', '--outDir', join(dir, 'dist')],
        process.env,
      );
      expect(build.code, build.stdout + build.stderr).toBe(0);
      await readFile(join(dir, 'dist/index.d.ts'), 'utf8');
      // Where an installed package finds its dependency.
      await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
      const built = (await import(
        pathToFileURL(join(dir, 'dist/index.js')).href
      )) as typeof import('../clients/typescript/src/index.js');
      const client = new built.DurableSandboxClient({ baseUrl: url, token: api.tenantA.token });
      expect((await client.listTemplates()).map((t) => t.name)).toContain('base');
      const pkg = JSON.parse(await readFile(join(ROOT, 'clients/typescript/package.json'), 'utf8'));
      const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
      expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
      // The repository runs the client with the versions it publishes it with.
      expect(pkg.dependencies['openapi-fetch']).toBe(root.dependencies['openapi-fetch']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('its example creates a sandbox, prints its IP and deletes it', async () => {
    const result = await runProcess(
      ['--import', 'tsx', 'clients/typescript/examples/create-and-wait.ts'],
      {
        ...process.env,
        DURABLE_SANDBOX_URL: url,
        DURABLE_SANDBOX_TOKEN: api.tenantA.token,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^sandbox sbx_\w+ running at \d+\.\d+\.\d+\.\d+$/m);
    expect(result.stdout).toMatch(/^sandbox sbx_\w+ deleted$/m);
  });
});
