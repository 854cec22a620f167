/**
 * Webhook signing secrets encrypted at rest (docs/security.md, "Webhook secrets at rest"): the
 * store keeps `whenc:v1:<key id>:<iv>:<ciphertext and tag>` (base64url), sealed with AES-256-GCM
 * under the first key of WEBHOOK_SECRET_KEYS, the key id bound as additional data. Any listed key
 * opens what it sealed, and the store re-seals every secret under the first key when it opens
 * (src/store/webhooks.ts `resealSecrets`), so a key is rotated by listing a new one first, restarting,
 * then dropping the old one. A stored value that is not sealed (`whsec_…`, written before a key
 * was set) is read as it is.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** The prefix of a sealed secret, with the format's version. */
const SEALED_PREFIX = 'whenc:v1:';
/** AES-256-GCM: a 32-byte key, a 12-byte IV (NIST SP 800-38D), a 16-byte tag. */
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A key id: what the sealed value names so the right key opens it. */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** The keys that seal and open webhook secrets: `current` seals, any of `keys` opens. */
export interface SecretKeyRing {
  current: { id: string; key: Buffer };
  keys: ReadonlyMap<string, Buffer>;
}

/** Thrown by {@link parseSecretKeyRing} for a malformed WEBHOOK_SECRET_KEYS; names the entry. */
export class SecretKeyRingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyRingError';
  }
}

/** Thrown when a sealed secret cannot be opened (an unknown key id, or a value tampered with). */
export class SealedSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedSecretError';
  }
}

/**
 * Parses WEBHOOK_SECRET_KEYS: comma-separated `id:key` pairs, `key` the base64 (or base64url) of
 * 32 random bytes (`openssl rand -base64 32`), the first the one that seals.
 * @returns undefined when `value` is unset or empty (secrets are then stored in clear)
 * @throws SecretKeyRingError naming the entry that is malformed, of the wrong size or repeated
 */
export function parseSecretKeyRing(value: string | undefined): SecretKeyRing | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const keys = new Map<string, Buffer>();
  let current: SecretKeyRing['current'] | undefined;
  for (const [index, entry] of value.split(',').entries()) {
    const colon = entry.indexOf(':');
    const id = entry.slice(0, colon).trim();
    if (colon < 0 || !KEY_ID.test(id)) {
      throw new SecretKeyRingError(
        `entry ${index + 1} must be id:base64key, the id 1 to 32 of A-Z a-z 0-9 _ -`,
      );
    }
    const key = Buffer.from(entry.slice(colon + 1).trim(), 'base64');
    if (key.length !== KEY_BYTES) {
      throw new SecretKeyRingError(
        `key ${id} must be the base64 of ${KEY_BYTES} bytes (openssl rand -base64 32); it has ${key.length}`,
      );
    }
    if (keys.has(id)) throw new SecretKeyRingError(`key ${id} is listed twice`);
    keys.set(id, key);
    current ??= { id, key };
  }
  return current && { current, keys };
}

/**
 * Seals a secret with the ring's current key; without a ring, returns it as it is.
 * @returns `whenc:v1:<id>:<iv>:<ciphertext+tag>`, a fresh random IV each call
 */
export function sealSecret(secret: string, ring: SecretKeyRing | undefined): string {
  if (!ring) return secret;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, iv);
  // The key id is bound to the ciphertext: a value relabelled with another id does not open.
  cipher.setAAD(Buffer.from(ring.current.id));
  const sealed = Buffer.concat([
    cipher.update(secret, 'utf8'),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  return `${SEALED_PREFIX}${ring.current.id}:${iv.toString('base64url')}:${sealed.toString('base64url')}`;
}

/** Whether a stored value is sealed (else it is a secret stored in clear). */
export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}

/**
 * Opens a stored secret: a sealed one with the key its id names, a clear one as it is.
 * @throws SealedSecretError when the value is sealed and no key of the ring opens it (no ring,
 *   an unknown key id, or a value altered since it was sealed)
 */
export function openSecret(stored: string, ring: SecretKeyRing | undefined): string {
  if (!isSealed(stored)) return stored;
  const [id = '', iv = '', sealed = ''] = stored.slice(SEALED_PREFIX.length).split(':');
  const key = ring?.keys.get(id);
  if (!key) {
    throw new SealedSecretError(
      `a webhook secret is sealed with key ${id}, which WEBHOOK_SECRET_KEYS does not list`,
    );
  }
  const bytes = Buffer.from(sealed, 'base64url');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(id));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  } catch {
    throw new SealedSecretError(`a webhook secret sealed with key ${id} does not open: altered`);
  }
}
