/**
 * Bad configuration stops a process at start with a message naming the variable
 * (docs/configuration.md): LOG_LEVEL is checked like every other value, and `npm run api`
 * refuses to start without credentials unless ALLOW_DEV_TOKEN=true opts into the dev token.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/index.js';

const dataDir = mkdtempSync(join(tmpdir(), 'config-errors-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Runs `script` under tsx with `env` (no inherited LOG_LEVEL, API_TOKENS, OIDC_*). */
function runScript(script: string, env: Record<string, string>) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(LOG_LEVEL|API_TOKENS|OIDC_|ALLOW_DEV_TOKEN|TEMPORAL_ADDRESS)/.test(name),
    ),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...base, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
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
    const { code, output } = await runScript('scripts/start.ts', { LOG_LEVEL: 'verbose' });
    expect(code).toBe(1);
    expect(output).toContain('LOG_LEVEL: must be one of');
    expect(output).not.toMatch(/unknown level|^\s+at /m);
  }, 120_000);
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
    const { code, output } = await runScript('api/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
    });
    expect(code).toBe(1);
    expect(output).toContain('API_TOKENS: is required by `npm run api`');
    expect(output).toContain('ALLOW_DEV_TOKEN=true');
  }, 120_000);

  it('with ALLOW_DEV_TOKEN=true goes on to connect (and fails only on the missing Temporal)', async () => {
    const { code, output } = await runScript('api/main.ts', {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      ALLOW_DEV_TOKEN: 'true',
    });
    expect(code).toBe(1);
    expect(output).not.toContain('API_TOKENS: is required');
    expect(output).toContain('api failed to start');
  }, 120_000);
});
