/**
 * The bench rigs start `npm run api` processes with BENCH_SERVICE_ENV: with it, and nothing
 * else about credentials, the API's credentials check passes; without it, it refuses (the
 * rigs once waited 600 s for an API that had exited at start).
 */
import { describe, expect, it } from 'vitest';
import { requireApiCredentials } from '../src/config/api-credentials.js';
import { freePort } from '../src/process/free-port.js';
import { ConfigError, DEV_TOKEN, loadConfig } from '../src/config/index.js';
import { BENCH_SERVICE_ENV, errorText, TOKEN } from '../tools/bench/support.js';

describe('the bench rigs’ service environment', () => {
  it('lets `npm run api` start on the token the bench calls with', () => {
    const config = loadConfig({ ...BENCH_SERVICE_ENV, TEMPORAL_ADDRESS: '127.0.0.1:7233' });
    expect(() => requireApiCredentials(config)).not.toThrow();
    expect(config.devToken).toBe(true);
    expect(TOKEN).toBe(DEV_TOKEN);
  });

  it('is what makes the difference: without it the API refuses to start', () => {
    const config = loadConfig({ TEMPORAL_ADDRESS: '127.0.0.1:7233' });
    expect(() => requireApiCredentials(config)).toThrow(ConfigError);
    expect(() => requireApiCredentials(config)).toThrow(/API_TOKENS.*ALLOW_DEV_TOKEN=true/);
  });
});

describe('the bench’s problem lines', () => {
  it('name why a fetch failed', async () => {
    // A port nothing listens on: undici's "fetch failed" with ECONNREFUSED as its cause.
    const err = await fetch(`http://127.0.0.1:${await freePort()}/`).catch((e: unknown) => e);
    expect(errorText(err)).toMatch(/^fetch failed \(ECONNREFUSED: .*ECONNREFUSED/);
    expect(errorText(new Error('plain'))).toBe('plain');
  });
});
