/**
 * A throwaway certificate authority for the local tiers, made with the `openssl` command (no
 * crypto of our own): an ECDSA P-256 CA, and certificates it signs for servers (with the names
 * and addresses they answer on) and for clients (mTLS). Every file is PEM, keys unencrypted
 * (mode 0600), valid for `days` (default 7); the folder is the caller's to remove.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate and its key, as files. */
export interface IssuedCertificate {
  certPath: string;
  keyPath: string;
}

/** A CA in a folder. */
export interface CertificateAuthority {
  /** The CA's certificate: what servers and clients trust. */
  caPath: string;
  /**
   * Signs a server certificate (`serverAuth` and `clientAuth`: servers of a cluster also call
   * each other) for `dnsNames` and `ipAddresses`.
   */
  issueServer(
    name: string,
    names: { dnsNames: string[]; ipAddresses: string[] },
  ): Promise<IssuedCertificate>;
  /** Signs a client certificate (`clientAuth`) whose subject is `CN=<name>`. */
  issueClient(name: string): Promise<IssuedCertificate>;
}

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args).catch((err: Error & { stderr?: string; code?: unknown }) => {
    if (err.code === 'ENOENT') {
      throw new Error('the `openssl` command is needed to make the tier certificates: install it');
    }
    throw new Error(`openssl ${args[0]} failed: ${err.stderr ?? err.message}`);
  });
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/**
 * Makes a CA in `dir` (created if missing).
 * @throws Error when `openssl` is missing or fails
 */
export async function createCertificateAuthority(
  dir: string,
  options: { commonName?: string; days?: number } = {},
): Promise<CertificateAuthority> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const days = String(options.days ?? 7);
  const caPath = join(dir, 'ca.pem');
  const caKeyPath = join(dir, 'ca-key.pem');
  await openssl([
    'req',
    '-x509',
    ...KEY,
    '-keyout',
    caKeyPath,
    '-out',
    caPath,
    '-days',
    days,
    '-subj',
    `/CN=${options.commonName ?? 'durable-sandbox local CA'}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const issue = async (name: string, extensions: string[]): Promise<IssuedCertificate> => {
    const certPath = join(dir, `${name}.pem`);
    const keyPath = join(dir, `${name}-key.pem`);
    const csrPath = join(dir, `${name}.csr`);
    const extPath = join(dir, `${name}.ext`);
    await openssl([
      'req',
      '-new',
      ...KEY,
      '-keyout',
      keyPath,
      '-out',
      csrPath,
      '-subj',
      `/CN=${name}`,
    ]);
    writeFileSync(extPath, [...extensions, 'basicConstraints=CA:FALSE', ''].join('\n'));
    await openssl([
      'x509',
      '-req',
      '-in',
      csrPath,
      '-CA',
      caPath,
      '-CAkey',
      caKeyPath,
      '-set_serial',
      `0x${Date.now().toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`,
      '-days',
      days,
      '-extfile',
      extPath,
      '-out',
      certPath,
    ]);
    return { certPath, keyPath };
  };
  return {
    caPath,
    issueServer: (name, { dnsNames, ipAddresses }) =>
      issue(name, [
        `subjectAltName=${[...dnsNames.map((d) => `DNS:${d}`), ...ipAddresses.map((ip) => `IP:${ip}`)].join(',')}`,
        'keyUsage=critical,digitalSignature',
        'extendedKeyUsage=serverAuth,clientAuth',
      ]),
    issueClient: (name) =>
      issue(name, ['keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth']),
  };
}
