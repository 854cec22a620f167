/**
 * How the service connects to Temporal (src/config/temporal-connection.ts; docs/security.md,
 * "Connecting to Temporal"), seen where it arrives: a TLS gRPC proxy of the test's own
 * (support/grpc-counter.ts) in front of the run's dev server records what each call carried.
 *
 * - An API key reaches the server as `authorization: Bearer <key>`, from the client
 *   `Connection` (API, health check, tools) and the worker's `NativeConnection`, and turns TLS
 *   on by itself.
 * - The client's certificate files are read again: after a rotation, its next TLS connection
 *   shows the new certificate; the worker is told the files changed.
 * - Plaintext to an address off this machine is warned about at start, by the API process too.
 * - Configuration mistakes stop the process naming the variable.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { ConfigError, loadConfig } from '../src/config/index.js';
import {
  clientConnectionOptions,
  isLoopbackAddress,
  nativeConnectionOptions,
  parseTemporalCredentials,
  temporalConnectionWarnings,
  type TemporalCredentials,
  watchCertificateFiles,
} from '../src/config/temporal-connection.js';
import {
  createCertificateAuthority,
  type CertificateAuthority,
  type IssuedCertificate,
} from '../environments/tls/certificate-authority.js';
import { startGrpcCounter, type GrpcCounter } from './support/grpc-counter.js';
import { waitUntil } from '../tools/wait-until.js';

const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-temporal-connection-'));
let ca: CertificateAuthority;
let proxy: GrpcCounter;
let clientA: IssuedCertificate;
let clientB: IssuedCertificate;
beforeAll(async () => {
  ca = await createCertificateAuthority(join(dir, 'ca'));
  const server = await ca.issueServer('proxy', {
    dnsNames: ['temporal-proxy'],
    ipAddresses: ['127.0.0.1'],
  });
  clientA = await ca.issueClient('client-a');
  clientB = await ca.issueClient('client-b');
  proxy = await startGrpcCounter(inject('temporalAddress'), { tls: server });
}, 60_000);
afterAll(async () => {
  await proxy?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Variables of a client that trusts the test CA. */
const trusting = (): Record<string, string> => ({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.caPath });

/** The `authorization` header the server saw on one GetSystemInfo of a fresh connection. */
async function authorizationSeen(
  kind: 'client' | 'native',
  env: Record<string, string>,
): Promise<string | undefined> {
  const credentials = parseTemporalCredentials(env);
  const connection =
    kind === 'client'
      ? await Connection.connect(clientConnectionOptions(proxy.address, credentials))
      : await NativeConnection.connect(nativeConnectionOptions(proxy.address, credentials));
  try {
    await connection.workflowService.getSystemInfo({});
  } finally {
    await connection.close();
  }
  return proxy.lastHeaders('GetSystemInfo')?.authorization;
}

describe('an API key', () => {
  it('reaches the server as `authorization: Bearer <key>` from the client Connection', async () => {
    expect(await authorizationSeen('client', { ...trusting(), TEMPORAL_API_KEY: 'key-one' })).toBe(
      'Bearer key-one',
    );
  });

  it('reaches the server from the client Connection when the CA is given inline', async () => {
    const env = {
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: readFileSync(ca.caPath, 'utf8'),
      TEMPORAL_API_KEY: 'key-inline',
    };
    expect(await authorizationSeen('client', env)).toBe('Bearer key-inline');
  });

  it("reaches the server from the worker's NativeConnection", async () => {
    expect(await authorizationSeen('native', { ...trusting(), TEMPORAL_API_KEY: 'key-two' })).toBe(
      'Bearer key-two',
    );
  });

  it('turns TLS on by itself (Temporal Cloud takes keys only over TLS), unless TEMPORAL_TLS=false', () => {
    expect(parseTemporalCredentials({ TEMPORAL_API_KEY: 'k' }).tls).toEqual({
      serverCa: undefined,
      serverName: undefined,
      clientCert: undefined,
    });
    expect(parseTemporalCredentials({ TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' })).toEqual({
      apiKey: 'k',
    });
  });
});

/**
 * Client certificate files of `client-a` at names of their own, and the credentials that read
 * them; `rotate()` replaces both with `client-b`'s, as cert-manager or a Secret volume does.
 */
function clientAFiles(name: string): { credentials: TemporalCredentials; rotate(): void } {
  const certPath = join(dir, `${name}.pem`);
  const keyPath = join(dir, `${name}-key.pem`);
  copyFileSync(clientA.certPath, certPath);
  copyFileSync(clientA.keyPath, keyPath);
  const credentials = parseTemporalCredentials({
    ...trusting(),
    TEMPORAL_TLS_CLIENT_CERT_PATH: certPath,
    TEMPORAL_TLS_CLIENT_KEY_PATH: keyPath,
  });
  return {
    credentials,
    rotate() {
      copyFileSync(clientB.certPath, certPath);
      copyFileSync(clientB.keyPath, keyPath);
    },
  };
}

describe('client certificate files', () => {
  it('are read again: after a rotation the next connection shows the new certificate', async () => {
    const { credentials, rotate } = clientAFiles('rotating');
    const connection = await Connection.connect(
      clientConnectionOptions(proxy.address, credentials, 100),
    );
    try {
      await connection.workflowService.getSystemInfo({});
      expect(proxy.lastClientCertificate('GetSystemInfo')).toBe('client-a');
      // A rotation as cert-manager or a kubelet's Secret volume does it: both files replaced.
      rotate();
      // The files are read again every 100 ms: connect anew until the proxy sees the new one.
      await waitUntil(
        async () => {
          proxy.dropConnections();
          await connection.workflowService.getSystemInfo({});
          return proxy.lastClientCertificate('GetSystemInfo') === 'client-b';
        },
        { timeoutMs: 10_000, what: 'a connection with the rotated certificate' },
      ).catch(() => undefined);
      expect(proxy.lastClientCertificate('GetSystemInfo')).toBe('client-b');
    } finally {
      await connection.close();
    }
  });

  it('tell the worker when they rotate (its connection takes them only at connect)', async () => {
    const { credentials, rotate } = clientAFiles('watched');
    const changes: string[][] = [];
    const stop = watchCertificateFiles(credentials, (variables) => changes.push(variables), 100);
    try {
      // A sleep: that unchanged files report nothing is what is proved (three reads at 100 ms).
      await new Promise((resolve) => setTimeout(resolve, 350));
      expect(changes).toEqual([]); // unchanged files are no rotation
      rotate();
      await waitUntil(async () => changes.length > 0, { timeoutMs: 5_000 }).catch(() => undefined);
      expect(changes).toEqual([['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH']]);
    } finally {
      stop();
    }
  });
});

describe('plaintext to an address off this machine', () => {
  it('is warned about; loopback and TLS are not', () => {
    expect(temporalConnectionWarnings('temporal.example.com:7233', {})).toEqual([
      expect.stringMatching(/temporal\.example\.com:7233 is plaintext/),
    ]);
    expect(temporalConnectionWarnings('10.0.0.7:7233', {})).toHaveLength(1);
    for (const address of ['127.0.0.1:7233', 'localhost:7233', '[::1]:7233', '127.8.0.1:1']) {
      expect(isLoopbackAddress(address), address).toBe(true);
      expect(temporalConnectionWarnings(address, {}), address).toEqual([]);
    }
    expect(temporalConnectionWarnings('temporal.example.com:7233', { tls: {} })).toEqual([]);
  });

  it('is warned about by the API process at start', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/api/main.ts'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        // TEST-NET-1: off this machine, and nothing answers (the API waits to connect).
        TEMPORAL_ADDRESS: '192.0.2.1:7233',
        API_TOKENS: 'tenant-a:token-a',
        DATA_DIR: join(dir, 'api-data'),
        LOG_FORMAT: 'json',
        PORT: String(await freePort()),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitUntil(async () => output.includes('is plaintext') || child.exitCode !== null, {
        timeoutMs: 30_000,
      }).catch(() => undefined);
      const line = output.split('\n').find((l) => l.includes('is plaintext'));
      expect(line, output).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ level: 40, temporal: '192.0.2.1:7233' });
    } finally {
      child.kill('SIGKILL');
    }
  }, 40_000);
});

describe('configuration mistakes', () => {
  /** The ConfigError loadConfig throws for `env`, as `variable: message`. */
  const problem = (env: Record<string, string>): string => {
    try {
      loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233', ...env });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('loadConfig accepted it');
  };

  it('an API key in plaintext to an address off this machine; on loopback it is only warned about', () => {
    expect(problem({ TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' })).toMatch(
      /^TEMPORAL_TLS: is false but TEMPORAL_API_KEY is set and TEMPORAL_ADDRESS \(temporal\.example\.com:7233\) is not on this machine/,
    );
    const local = loadConfig({
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_API_KEY: 'k',
      TEMPORAL_TLS: 'false',
    });
    expect(temporalConnectionWarnings('127.0.0.1:7233', local.temporalCredentials)).toEqual([
      expect.stringMatching(/^TEMPORAL_API_KEY is sent in plaintext/),
    ]);
    // With TLS (the default once a key is set) it goes anywhere.
    expect(
      loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233', TEMPORAL_API_KEY: 'k' })
        .temporalCredentials.apiKey,
    ).toBe('k');
  });

  it('a certificate without its key, or a key without its certificate', () => {
    expect(problem({ TEMPORAL_TLS_CLIENT_CERT_PATH: clientA.certPath })).toMatch(
      /^TEMPORAL_TLS_CLIENT_CERT_PATH: is set without TEMPORAL_TLS_CLIENT_KEY_PATH/,
    );
    expect(problem({ TEMPORAL_TLS_CLIENT_KEY_PATH: clientA.keyPath })).toMatch(
      /^TEMPORAL_TLS_CLIENT_KEY_PATH: is set without TEMPORAL_TLS_CLIENT_CERT_PATH/,
    );
  });

  it('a file that cannot be read, or is not PEM, naming the file', () => {
    const missing = join(dir, 'missing.pem');
    expect(
      problem({
        TEMPORAL_TLS_CLIENT_CERT_PATH: missing,
        TEMPORAL_TLS_CLIENT_KEY_PATH: clientA.keyPath,
      }),
    ).toBe(`TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read ${missing} (ENOENT)`);
    const garbage = join(dir, 'garbage.pem');
    writeFileSync(garbage, 'not a certificate');
    expect(problem({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: garbage })).toBe(
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH: ${garbage} is not a PEM CA certificate`,
    );
    expect(
      problem({
        TEMPORAL_TLS_CLIENT_CERT_PATH: clientA.certPath,
        TEMPORAL_TLS_CLIENT_KEY_PATH: garbage,
      }),
    ).toMatch(/^TEMPORAL_TLS_CLIENT_KEY_PATH: .* is not a PEM private key/);
  });

  it("a key that is not the certificate's, and a certificate that expired", () => {
    expect(
      problem({
        TEMPORAL_TLS_CLIENT_CERT_PATH: clientA.certPath,
        TEMPORAL_TLS_CLIENT_KEY_PATH: clientB.keyPath,
      }),
    ).toMatch(
      /^TEMPORAL_TLS_CLIENT_KEY_PATH: is not the key of the client certificate .*CN=client-a/,
    );
    const env = {
      TEMPORAL_TLS_CLIENT_CERT_PATH: clientA.certPath,
      TEMPORAL_TLS_CLIENT_KEY_PATH: clientA.keyPath,
    };
    expect(() => parseTemporalCredentials(env, new Date(Date.now() + 30 * 86_400_000))).toThrow(
      /the client certificate expired at/,
    );
  });

  it('contradictions: a file and inline data, TLS settings with TEMPORAL_TLS=false, bad booleans', () => {
    expect(
      problem({
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.caPath,
        TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'x',
      }),
    ).toMatch(
      /^TEMPORAL_TLS_SERVER_CA_CERT_PATH: is set together with TEMPORAL_TLS_SERVER_CA_CERT_DATA/,
    );
    expect(problem({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_NAME: 'temporal' })).toMatch(
      /^TEMPORAL_TLS: is false but TEMPORAL_TLS_SERVER_NAME is set/,
    );
    expect(problem({ TEMPORAL_TLS: 'yes' })).toBe(
      'TEMPORAL_TLS: must be "true" or "false", got "yes"',
    );
    expect(problem({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' })).toMatch(
      /^TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: is not supported/,
    );
  });

  it('stop the API at start with a line naming the variable', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/api/main.ts'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_ADDRESS: '127.0.0.1:7233',
        API_TOKENS: 'tenant-a:token-a',
        DATA_DIR: join(dir, 'api-data-2'),
        TEMPORAL_TLS_CLIENT_CERT_PATH: clientA.certPath,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /TEMPORAL_TLS_CLIENT_CERT_PATH: is set without TEMPORAL_TLS_CLIENT_KEY_PATH/,
    );
  }, 40_000);
});
