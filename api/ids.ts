/**
 * Resource ids: a type prefix (`op_`, `sbx_`) and 26 random lowercase base32 characters
 * (RFC 4648 alphabet, lowercased: 130 random bits).
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const RANDOM_LENGTH = 26;

/** Matches an operation id, e.g. `op_k5v2…` (26 base32 characters after the prefix). */
export const OPERATION_ID = /^op_[a-z2-7]{26}$/;
/** Matches a sandbox id, e.g. `sbx_q7…` (26 base32 characters after the prefix). */
export const SANDBOX_ID = /^sbx_[a-z2-7]{26}$/;

function randomBase32(length: number): string {
  // 256 is a multiple of 32, so `byte & 31` is uniform.
  return Array.from(randomBytes(length), (byte) => ALPHABET[byte & 31]).join('');
}

/** A fresh operation id (`op_` + 26 base32 characters); also the workflow id. */
export function newOperationId(): string {
  return `op_${randomBase32(RANDOM_LENGTH)}`;
}

/** A fresh sandbox id (`sbx_` + 26 base32 characters). */
export function newSandboxId(): string {
  return `sbx_${randomBase32(RANDOM_LENGTH)}`;
}
