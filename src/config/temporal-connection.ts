/**
 * How every process connects to Temporal besides its address: TLS (the server's CA, the server
 * name), an mTLS client certificate and key, and an API key (Temporal Cloud). Read from the
 * variables the Temporal CLI and the SDKs' environment configuration use (Temporal, "Client
 * environment configuration" reference; the CLI's `--tls-*` and `--api-key` options), checked
 * once at start, and turned into the options of the TypeScript SDK's two connections:
 * `Connection` (`@temporalio/client`: the API, the worker's health check, the tools) and
 * `NativeConnection` (`@temporalio/worker`: the worker). docs/configuration.md lists the
 * variables; docs/security.md, "Connecting to Temporal", says what happens when files rotate.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { experimental, type ChannelCredentials } from '@grpc/grpc-js';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';

/** The variables {@link parseTemporalCredentials} reads, in the CLI's names. */
export const TEMPORAL_CONNECTION_VARIABLES = [
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_API_KEY',
] as const;

/**
 * How often the certificate files are read again, in ms: a connection opened after a rotation
 * uses the new files at most this long after they changed.
 */
export const CERTIFICATE_REFRESH_INTERVAL_MS = 60_000;

/** Thrown by {@link parseTemporalCredentials}; the message starts with no variable name. */
export class TemporalConnectionProblem extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'TemporalConnectionProblem';
  }
}

/** PEM text given in a file (read again when it rotates) or inline in a variable. */
export type PemSource = { variable: string; path: string } | { variable: string; data: string };

/** TLS to the frontend. Absent parts: the system's roots, the address's host, no client certificate. */
export interface TemporalTls {
  /** CA bundle that signed the frontend's certificate (default: the system's roots). */
  serverCa?: PemSource;
  /** Name the frontend's certificate must hold (SNI and verification); default: the host. */
  serverName?: string;
  /** mTLS: the client certificate (chain) and its key, always both. */
  clientCert?: { cert: PemSource; key: PemSource };
}

/** Everything but the address and namespace that a connection to Temporal needs. */
export interface TemporalCredentials {
  /** Unset: plaintext. */
  tls?: TemporalTls;
  /** Sent as `authorization: Bearer <key>` on every call. */
  apiKey?: string;
}

function trimmed(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** The CLI's booleans: `true`/`1` and `false`/`0`; unset or empty is undefined. */
function flag(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const value = trimmed(env, name)?.toLowerCase();
  if (value === undefined) return undefined;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new TemporalConnectionProblem(name, `must be "true" or "false", got "${env[name]}"`);
}

/** `<NAME>_PATH` or `<NAME>_DATA` (never both), as a {@link PemSource}. */
function pemSource(env: NodeJS.ProcessEnv, name: string): PemSource | undefined {
  const path = trimmed(env, `${name}_PATH`);
  const data = env[`${name}_DATA`]?.trim() ? env[`${name}_DATA`] : undefined;
  if (path && data) {
    throw new TemporalConnectionProblem(
      `${name}_PATH`,
      `is set together with ${name}_DATA: set one of them`,
    );
  }
  if (path) return { variable: `${name}_PATH`, path };
  if (data) return { variable: `${name}_DATA`, data };
  return undefined;
}

/**
 * The PEM text of a source, read now.
 * @throws TemporalConnectionProblem naming the variable when the file cannot be read
 */
export function readPem(source: PemSource): string {
  if ('data' in source) return source.data;
  try {
    return readFileSync(source.path, 'utf8');
  } catch (err) {
    throw new TemporalConnectionProblem(
      source.variable,
      `cannot read ${source.path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

function certificateOf(source: PemSource, text: string, what: string): X509Certificate {
  try {
    return new X509Certificate(text);
  } catch {
    throw new TemporalConnectionProblem(
      source.variable,
      `${'path' in source ? source.path : 'the value'} is not a PEM ${what}`,
    );
  }
}

/** Reads and checks every file now, so a mistake stops the process at start, by name. */
function checkTls(tls: TemporalTls, now: Date): void {
  if (tls.serverCa) certificateOf(tls.serverCa, readPem(tls.serverCa), 'CA certificate');
  if (!tls.clientCert) return;
  const { cert, key } = tls.clientCert;
  const certificate = certificateOf(cert, readPem(cert), 'certificate');
  let privateKey;
  try {
    privateKey = createPrivateKey(readPem(key));
  } catch (err) {
    if (err instanceof TemporalConnectionProblem) throw err;
    throw new TemporalConnectionProblem(
      key.variable,
      `${'path' in key ? key.path : 'the value'} is not a PEM private key (an encrypted key is not supported)`,
    );
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new TemporalConnectionProblem(
      key.variable,
      `is not the key of the client certificate (${cert.variable}, subject ${certificate.subject.replace(/\n/g, ', ')})`,
    );
  }
  if (new Date(certificate.validTo) <= now) {
    throw new TemporalConnectionProblem(
      cert.variable,
      `the client certificate expired at ${new Date(certificate.validTo).toISOString()}`,
    );
  }
}

/**
 * Reads the TLS and API key variables ({@link TEMPORAL_CONNECTION_VARIABLES}) as the Temporal
 * CLI does: TLS is on when TEMPORAL_TLS is `true`, or when an API key or any TLS setting is
 * given and TEMPORAL_TLS is not `false` (Temporal Cloud takes an API key only over TLS).
 * Certificate and key files are read and checked now (readable, PEM, key matches the
 * certificate, certificate not expired); they are read again later by the connections.
 * @param env the environment (default `process.env`)
 * @param now the time certificates are checked against (default: now)
 * @throws TemporalConnectionProblem naming the variable: a certificate without its key or the
 *   reverse, `_PATH` and `_DATA` both set, an unreadable or malformed file, a key that does not
 *   match, an expired certificate, TLS settings with TEMPORAL_TLS=false, or
 *   TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=true (the TypeScript SDK's worker connection cannot
 *   skip verification)
 */
export function parseTemporalCredentials(
  env: NodeJS.ProcessEnv = process.env,
  now = new Date(),
): TemporalCredentials {
  const enabled = flag(env, 'TEMPORAL_TLS');
  const apiKey = trimmed(env, 'TEMPORAL_API_KEY');
  const serverCa = pemSource(env, 'TEMPORAL_TLS_SERVER_CA_CERT');
  const cert = pemSource(env, 'TEMPORAL_TLS_CLIENT_CERT');
  const key = pemSource(env, 'TEMPORAL_TLS_CLIENT_KEY');
  const serverName = trimmed(env, 'TEMPORAL_TLS_SERVER_NAME');
  if (flag(env, 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION')) {
    throw new TemporalConnectionProblem(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      'is not supported (the TypeScript SDK verifies the server always): set ' +
        "TEMPORAL_TLS_SERVER_NAME to a name the server's certificate holds",
    );
  }
  if (cert && !key) {
    throw new TemporalConnectionProblem(
      cert.variable,
      'is set without TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA): a client certificate needs its key',
    );
  }
  if (key && !cert) {
    throw new TemporalConnectionProblem(
      key.variable,
      'is set without TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA): a key needs its certificate',
    );
  }
  const tlsSettings = [serverCa?.variable, cert?.variable, key?.variable]
    .concat(serverName ? ['TEMPORAL_TLS_SERVER_NAME'] : [])
    .filter(Boolean);
  if (enabled === false && tlsSettings.length > 0) {
    throw new TemporalConnectionProblem(
      'TEMPORAL_TLS',
      `is false but ${tlsSettings.join(', ')} ${tlsSettings.length > 1 ? 'are' : 'is'} set: ` +
        'unset them, or TEMPORAL_TLS',
    );
  }
  const on = enabled ?? (tlsSettings.length > 0 || apiKey !== undefined);
  if (!on) return { apiKey };
  const tls: TemporalTls = {
    serverCa,
    serverName,
    clientCert: cert && key ? { cert, key } : undefined,
  };
  checkTls(tls, now);
  return { tls, apiKey };
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether `host:port` names this machine: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopbackAddress(address: string): boolean {
  const host = address
    .replace(/:\d+$/, '')
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 0) return false;
  return LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Refuses to send an API key in plaintext to a frontend that is not on this machine: whoever
 * is on the path would read the key and then act as the service on Temporal (start, read and
 * cancel every tenant's workflows). On loopback it is only warned about
 * ({@link temporalConnectionWarnings}), for a local server without TLS.
 * @param address the frontend's `host:port`; undefined is npm start's own server (loopback)
 * @throws TemporalConnectionProblem naming TEMPORAL_TLS when an API key would go in plaintext
 *   off this machine
 */
export function refusePlaintextApiKey(
  address: string | undefined,
  credentials: TemporalCredentials,
): void {
  if (!credentials.apiKey || credentials.tls || !address || isLoopbackAddress(address)) return;
  throw new TemporalConnectionProblem(
    'TEMPORAL_TLS',
    `is false but TEMPORAL_API_KEY is set and TEMPORAL_ADDRESS (${address}) is not on this ` +
      'machine: the key would travel in plaintext. Turn TLS on (unset TEMPORAL_TLS), or use ' +
      'the key only with a server on loopback',
  );
}

/**
 * What a process should warn about at start: plaintext to a frontend that is not on this
 * machine (anyone on the path reads and forges every call), and an API key sent in plaintext.
 * @returns one message per problem; empty when there is none
 */
export function temporalConnectionWarnings(
  address: string,
  credentials: TemporalCredentials,
): string[] {
  if (credentials.tls) return [];
  const warnings: string[] = [];
  if (!isLoopbackAddress(address)) {
    warnings.push(
      `the connection to Temporal at ${address} is plaintext, without TLS or a client ` +
        'certificate: whoever reaches that address can start, read and cancel every ' +
        "tenant's workflows. Set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH " +
        '(mTLS) or TEMPORAL_API_KEY (docs/production.md, "Connecting to Temporal")',
    );
  }
  if (credentials.apiKey) {
    warnings.push(
      'TEMPORAL_API_KEY is sent in plaintext (TEMPORAL_TLS=false): use TLS outside this machine',
    );
  }
  return warnings;
}

/** The SDK's static TLS options, every file read now. */
function staticTls(tls: TemporalTls): NonNullable<NativeConnectionOptions['tls']> {
  const bytes = (source: PemSource) => Buffer.from(readPem(source));
  return {
    serverNameOverride: tls.serverName,
    serverRootCACertificate: tls.serverCa ? bytes(tls.serverCa) : undefined,
    clientCertPair: tls.clientCert
      ? { crt: bytes(tls.clientCert.cert), key: bytes(tls.clientCert.key) }
      : undefined,
  };
}

function hasFiles(tls: TemporalTls): boolean {
  return [tls.serverCa, tls.clientCert?.cert, tls.clientCert?.key].some(
    (source) => source !== undefined && 'path' in source,
  );
}

/** A certificate provider that never changes (inline PEM, or the system's roots). */
function staticProvider(update: {
  ca?: Buffer;
  identity?: { certificate: Buffer; privateKey: Buffer };
}): experimental.CertificateProvider {
  return {
    addCaCertificateListener: (listener) =>
      process.nextTick(listener, update.ca ? { caCertificate: update.ca } : null),
    removeCaCertificateListener: () => undefined,
    addIdentityCertificateListener: (listener) =>
      process.nextTick(listener, update.identity ?? null),
    removeIdentityCertificateListener: () => undefined,
  };
}

/**
 * Channel credentials whose files are read again every `refreshIntervalMs`: each TLS
 * connection the channel opens (the first, and every reconnect) uses the newest certificate,
 * key and CA read (grpc-js's FileWatcherCertificateProvider); a connection already open keeps
 * the certificate it was opened with.
 */
function rotatingCredentials(tls: TemporalTls, refreshIntervalMs: number): ChannelCredentials {
  const { serverCa, clientCert } = tls;
  const ca =
    serverCa && 'path' in serverCa
      ? new experimental.FileWatcherCertificateProvider({
          caCertificateFile: serverCa.path,
          refreshIntervalMs,
        })
      : staticProvider({
          ca: Buffer.from(serverCa ? readPem(serverCa) : rootCertificates.join('\n')),
        });
  let identity: experimental.CertificateProvider | null = null;
  if (clientCert && 'path' in clientCert.cert && 'path' in clientCert.key) {
    identity = new experimental.FileWatcherCertificateProvider({
      certificateFile: clientCert.cert.path,
      privateKeyFile: clientCert.key.path,
      refreshIntervalMs,
    });
  } else if (clientCert) {
    identity = staticProvider({
      identity: {
        certificate: Buffer.from(readPem(clientCert.cert)),
        privateKey: Buffer.from(readPem(clientCert.key)),
      },
    });
  }
  return experimental.createCertificateProviderChannelCredentials(ca, identity);
}

/**
 * Options of `Connection.connect` (`@temporalio/client`) for `address` with `credentials`.
 * TLS given by files rotates: the files are read again every `refreshIntervalMs` and each new
 * TLS connection uses what was read last (see {@link rotatingCredentials}); inline PEM and the
 * API key are fixed for the process's life.
 * @param refreshIntervalMs default {@link CERTIFICATE_REFRESH_INTERVAL_MS}
 */
export function clientConnectionOptions(
  address: string,
  credentials: TemporalCredentials,
  refreshIntervalMs = CERTIFICATE_REFRESH_INTERVAL_MS,
): ConnectionOptions & { address: string } {
  const { tls, apiKey } = credentials;
  if (!tls) return { address, apiKey, tls: false };
  if (!hasFiles(tls)) return { address, apiKey, tls: staticTls(tls) };
  return {
    address,
    credentials: rotatingCredentials(tls, refreshIntervalMs),
    // The SDK takes `apiKey` only with its own TLS option; the header it would send.
    metadata: apiKey ? { authorization: `Bearer ${apiKey}` } : undefined,
    channelArgs: tls.serverName
      ? {
          'grpc.ssl_target_name_override': tls.serverName,
          'grpc.default_authority': tls.serverName,
        }
      : undefined,
  };
}

/**
 * Options of `NativeConnection.connect` (`@temporalio/worker`) for `address` with
 * `credentials`: every file is read now, once (the worker's Rust core takes TLS only at
 * connect; {@link watchCertificateFiles} tells the worker when to connect again).
 * @throws TemporalConnectionProblem when a file can no longer be read
 */
export function nativeConnectionOptions(
  address: string,
  credentials: TemporalCredentials,
): NativeConnectionOptions {
  const { tls, apiKey } = credentials;
  return { address, apiKey, tls: tls ? staticTls(tls) : false };
}

/**
 * Calls `onChange` once when a certificate, key or CA file of `credentials` reads differently
 * than it did when this was called (checked every `refreshIntervalMs`, through grpc-js's
 * FileWatcherCertificateProvider). A file that cannot be read meanwhile (mid-rotation) counts
 * as no change.
 * @returns a function that stops watching; a no-op when no TLS file is configured
 */
export function watchCertificateFiles(
  credentials: TemporalCredentials,
  onChange: (variables: string[]) => void,
  refreshIntervalMs = CERTIFICATE_REFRESH_INTERVAL_MS,
): () => void {
  const tls = credentials.tls;
  const files = [tls?.serverCa, tls?.clientCert?.cert, tls?.clientCert?.key].filter(
    (source): source is { variable: string; path: string } =>
      source !== undefined && 'path' in source,
  );
  if (files.length === 0) return () => undefined;
  const initial = new Map(files.map((source) => [source.path, safeRead(source.path)]));
  const pathOf = (variable: string) => files.find((f) => f.variable === variable)?.path;
  const provider = new experimental.FileWatcherCertificateProvider({
    caCertificateFile: pathOf('TEMPORAL_TLS_SERVER_CA_CERT_PATH'),
    certificateFile: pathOf('TEMPORAL_TLS_CLIENT_CERT_PATH'),
    privateKeyFile: pathOf('TEMPORAL_TLS_CLIENT_KEY_PATH'),
    refreshIntervalMs,
  });
  let fired = false;
  const changed = (path: string | undefined, now: Buffer | undefined) =>
    path !== undefined && now !== undefined && !now.equals(initial.get(path) ?? Buffer.alloc(0));
  const report = (variables: (string | false)[]) => {
    const named = variables.filter((v): v is string => Boolean(v));
    if (fired || named.length === 0) return;
    fired = true;
    stop();
    onChange(named);
  };
  const onCa: experimental.CaCertificateUpdateListener = (update) =>
    report([
      changed(pathOf('TEMPORAL_TLS_SERVER_CA_CERT_PATH'), update?.caCertificate) &&
        'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    ]);
  const onIdentity: experimental.IdentityCertificateUpdateListener = (update) =>
    report([
      changed(pathOf('TEMPORAL_TLS_CLIENT_CERT_PATH'), update?.certificate) &&
        'TEMPORAL_TLS_CLIENT_CERT_PATH',
      changed(pathOf('TEMPORAL_TLS_CLIENT_KEY_PATH'), update?.privateKey) &&
        'TEMPORAL_TLS_CLIENT_KEY_PATH',
    ]);
  const watchCa = pathOf('TEMPORAL_TLS_SERVER_CA_CERT_PATH') !== undefined;
  const watchIdentity = pathOf('TEMPORAL_TLS_CLIENT_CERT_PATH') !== undefined;
  const stop = () => {
    if (watchCa) provider.removeCaCertificateListener(onCa);
    if (watchIdentity) provider.removeIdentityCertificateListener(onIdentity);
  };
  if (watchCa) provider.addCaCertificateListener(onCa);
  if (watchIdentity) provider.addIdentityCertificateListener(onIdentity);
  return stop;
}

function safeRead(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}
