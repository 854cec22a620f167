/**
 * Sealing webhook secrets (src/webhooks/secret-box.ts): AES-256-GCM under the ring's first key, the
 * key id bound to the ciphertext, clear values read as they are, WEBHOOK_SECRET_KEYS checked.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isSealed,
  openSecret,
  parseSecretKeyRing,
  SealedSecretError,
  sealSecret,
} from '../src/webhooks/secret-box.js';

const key = () => randomBytes(32).toString('base64');
const ring = (value: string) => parseSecretKeyRing(value)!;

describe('webhook secrets sealed at rest', () => {
  it('opens what it seals, for any secret, and never shows the secret in the sealed value', () => {
    const keys = ring(`k1:${key()}`);
    fc.assert(
      fc.property(fc.string({ minLength: 8 }), (secret) => {
        const sealed = sealSecret(secret, keys);
        expect(isSealed(sealed)).toBe(true);
        expect(sealed).not.toContain(secret);
        expect(openSecret(sealed, keys)).toBe(secret);
      }),
    );
  });

  it('seals with a fresh IV each time', () => {
    const keys = ring(`k1:${key()}`);
    expect(sealSecret('whsec_same', keys)).not.toBe(sealSecret('whsec_same', keys));
  });

  it('rotates: the first key seals, every listed key opens what it sealed', () => {
    const oldKey = key();
    const before = ring(`old:${oldKey}`);
    const after = ring(`new:${key()},old:${oldKey}`);
    const sealedBefore = sealSecret('whsec_a', before);
    expect(openSecret(sealedBefore, after)).toBe('whsec_a');
    expect(sealSecret('whsec_b', after)).toMatch(/^whenc:v1:new:/);
    // Without the old key, what it sealed does not open, and the error names the variable.
    expect(() => openSecret(sealedBefore, ring(`new:${key()}`))).toThrow(/WEBHOOK_SECRET_KEYS/);
  });

  it('refuses a value altered or relabelled with another key id', () => {
    const shared = key();
    const keys = ring(`a:${shared},b:${shared}`);
    const sealed = sealSecret('whsec_x', keys);
    const relabelled = sealed.replace('whenc:v1:a:', 'whenc:v1:b:');
    expect(() => openSecret(relabelled, keys)).toThrow(SealedSecretError);
    const last = sealed.at(-2) === 'A' ? 'B' : 'A';
    const altered = `${sealed.slice(0, -2)}${last}${sealed.at(-1)}`;
    expect(() => openSecret(altered, keys)).toThrow(SealedSecretError);
  });

  it('reads a secret stored in clear (before a key was set) as it is, and stores in clear without keys', () => {
    expect(openSecret('whsec_plain', ring(`k:${key()}`))).toBe('whsec_plain');
    expect(sealSecret('whsec_plain', undefined)).toBe('whsec_plain');
    expect(() => openSecret(sealSecret('whsec_x', ring(`k:${key()}`)), undefined)).toThrow(
      SealedSecretError,
    );
  });

  it('checks WEBHOOK_SECRET_KEYS, naming the entry', () => {
    expect(parseSecretKeyRing(undefined)).toBeUndefined();
    expect(parseSecretKeyRing(' ')).toBeUndefined();
    expect(() => parseSecretKeyRing('nokey')).toThrow('entry 1 must be id:base64key');
    expect(() => parseSecretKeyRing(`k:${randomBytes(16).toString('base64')}`)).toThrow(
      'key k must be the base64 of 32 bytes (openssl rand -base64 32); it has 16',
    );
    const k = key();
    expect(() => parseSecretKeyRing(`k:${k},k:${k}`)).toThrow('key k is listed twice');
    expect(ring(`first:${k},second:${key()}`).current.id).toBe('first');
  });
});
