/**
 * Bad configuration stops a process at start with a message naming the variable
 * (docs/configuration.md): LOG_LEVEL is checked like every other value, and `npm run api`
 * refuses to start without credentials unless ALLOW_DEV_TOKEN=true opts into the dev token.
 * Off a terminal (these children have none), a failed start is one plain line on stderr unless
 * LOG_FORMAT=json asks for the JSON line (src/process/startup-failure.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { loadConfig } from '../src/config/index.js';
import { startupFailureLine } from '../src/process/startup-failure.js';

const dataDir = mkdtempSync(join(tmpdir(), 'config-errors-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/**
 * Runs `script` under tsx with `env` (no inherited LOG_LEVEL, LOG_FORMAT, API_TOKENS, OIDC_*,
 * TEMPORAL_ADDRESS, DATABASE_URL, KUBECONFIG), its stdout and stderr pipes (no terminal).
 */
function runScript(script: string, env: Record<string, string>) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) =>
        !/^(LOG_LEVEL|LOG_FORMAT|API_TOKENS|OIDC_|ALLOW_DEV_TOKEN|TEMPORAL_ADDRESS|DATABASE_URL|KUBECONFIG)/.test(
          name,
        ),
    ),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...base, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
  return new Promise<{ code: number | null; output: string; stdout: string; stderr: string }>(
    (resolve) =>
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output: stdout + stderr, stdout, stderr });
      }),
  );
}

/** A kubeconfig whose cluster is at a closed port (the worker builds its client, never calls). */
function unreachableKubeconfig(): string {
  const file = join(dataDir, 'kubeconfig');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
      'contexts: [{name: c, context: {cluster: c, user: u}}]',
      'users: [{name: u, user: {}}]',
      'current-context: c',
    ].join('\n'),
  );
  return file;
}

function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('LOG_LEVEL', () => {
  it('an unknown level is refused naming LOG_LEVEL and the levels', () => {
    expect(refusal({ LOG_LEVEL: 'verbose' })).toBe(
      'LOG_LEVEL: must be one of trace, debug, info, warn, error, fatal, silent, got "verbose"',
    );
    expect(loadConfig({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
  });

  it('npm start with LOG_LEVEL=verbose stops with that message, not a pino stack trace', async () => {
    const { code, output, stderr } = await runScript('tools/start.ts', { LOG_LEVEL: 'verbose' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^the stack failed to start: LOG_LEVEL: must be one of /);
    expect(output).not.toMatch(/unknown level|^\s+at /m);
  }, 180_000);
});

describe('npm run api without credentials', () => {
  it('ALLOW_DEV_TOKEN takes only true or false', () => {
    expect(refusal({ ALLOW_DEV_TOKEN: 'yes' })).toBe(
      'ALLOW_DEV_TOKEN: must be "true" or "false", got "yes"',
    );
    expect(loadConfig({ ALLOW_DEV_TOKEN: 'true' }).allowDevToken).toBe(true);
    expect(loadConfig({}).allowDevToken).toBe(false);
  });

  it('refuses to start with neither API_TOKENS nor OIDC_ISSUER, naming API_TOKENS', async () => {
    const { code, output } = await runScript('src/api/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
    });
    expect(code).toBe(1);
    expect(output).toContain('API_TOKENS: is required by `npm run api`');
    expect(output).toContain('ALLOW_DEV_TOKEN=true');
  }, 180_000);

  it('with ALLOW_DEV_TOKEN=true goes on to connect (and fails only on the missing Temporal)', async () => {
    const { code, output } = await runScript('src/api/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      ALLOW_DEV_TOKEN: 'true',
    });
    expect(code).toBe(1);
    expect(output).not.toContain('API_TOKENS: is required');
    expect(output).toContain(
      'api failed to start: TEMPORAL_ADDRESS: cannot reach the Temporal frontend at 127.0.0.1:1 (',
    );
  }, 180_000);
});

describe('LOG_FORMAT', () => {
  it('takes json or nothing', () => {
    expect(refusal({ LOG_FORMAT: 'text' })).toBe('LOG_FORMAT: must be "json" or unset, got "text"');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({}).logFormat).toBeUndefined();
  });
});

describe('a failed start off a terminal', () => {
  const kubeconfig = unreachableKubeconfig();

  it('is one plain line on stderr naming the variable and what to do, nothing on stdout', async () => {
    const { code, stdout, stderr } = await runScript('src/api/main.ts', {});
    expect(code).toBe(1);
    expect(stderr).toBe(
      'api failed to start: TEMPORAL_ADDRESS: is required by `npm run api` (npm start runs its own)\n',
    );
    expect(stdout).toBe('');
  }, 180_000);

  it('is one pino fatal JSON line on stdout with LOG_FORMAT=json (error and stack)', async () => {
    const { code, stdout, stderr } = await runScript('src/api/main.ts', { LOG_FORMAT: 'json' });
    expect(code).toBe(1);
    expect(stderr).toBe('');
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(line).toMatchObject({
      level: 60,
      name: 'api',
      msg: 'TEMPORAL_ADDRESS: is required by `npm run api` (npm start runs its own)',
      err: { type: 'ConfigError' },
    });
    expect(line.err.stack).toContain('src/api/main.ts');
  }, 180_000);

  it('names DATABASE_URL (host and database, not the password) when PostgreSQL cannot be reached', async () => {
    const { code, stdout, stderr } = await runScript('src/worker/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      KUBECONFIG: kubeconfig,
      DATABASE_URL: 'postgres://sandbox:s3cret@127.0.0.1:1/sandboxes',
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^worker failed to start: DATABASE_URL: cannot open the PostgreSQL store at 127\.0\.0\.1:1\/sandboxes \(.*ECONNREFUSED.*\); check DATABASE_URL and that PostgreSQL is running[^\n]*\n$/,
    );
    expect(stderr).not.toContain('s3cret');
    expect(stdout).toBe('');
  }, 180_000);

  it('names TEMPORAL_ADDRESS when the worker cannot reach the frontend, and exits', async () => {
    const { code, stderr } = await runScript('src/worker/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      KUBECONFIG: kubeconfig,
      METRICS_PORT: String(await freePort()),
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^worker failed to start: TEMPORAL_ADDRESS: cannot reach the Temporal frontend at 127\.0\.0\.1:1 \([^\n]+\); check TEMPORAL_ADDRESS[^\n]*\n$/,
    );
  }, 180_000);

  it('names KUBECONFIG when the worker has no cluster credentials', async () => {
    const { code, stderr } = await runScript('src/worker/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^worker failed to start: KUBECONFIG: cannot find credentials for the cluster \(.*\); set KUBECONFIG to a readable kubeconfig file, or run inside the cluster\n$/,
    );
  }, 180_000);
});

describe('startupFailureLine', () => {
  it('points at the stack trace for an error it does not know, on one line', () => {
    expect(startupFailureLine('api', new Error('boom\n  at x'))).toBe(
      'api failed to start: boom at x (unexpected: LOG_FORMAT=json logs its stack trace)',
    );
    expect(startupFailureLine('worker', new AggregateError([new Error('a'), new Error('b')]))).toBe(
      'worker failed to start: a; b (unexpected: LOG_FORMAT=json logs its stack trace)',
    );
  });
});
