/**
 * Resource ids: a type prefix (`op_`, `sbx_`) and 26 random lowercase base32 characters
 * (RFC 4648 alphabet, lowercased: 130 random bits). Part of the contract: the API makes them and
 * checks their shape, the lifetime activity derives an expiry's. The random bytes come from the
 * Web Crypto global (no Node import: contract/ stays pure).
 */

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const RANDOM_LENGTH = 26;

/** Matches an operation id, e.g. `op_k5v2…` (26 base32 characters after the prefix). */
export const OPERATION_ID = /^op_[a-z2-7]{26}$/;
/** Matches a sandbox id, e.g. `sbx_q7…` (26 base32 characters after the prefix). */
export const SANDBOX_ID = /^sbx_[a-z2-7]{26}$/;

/** Base32 of each byte's low 5 bits (256 is a multiple of 32, so uniform bytes stay uniform). */
function base32Of(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => ALPHABET[byte & 31]).join('');
}

function randomBase32(length: number): string {
  return base32Of(crypto.getRandomValues(new Uint8Array(length)));
}

/**
 * The operation id derived from `digest` (at least 26 bytes, e.g. a SHA-256): the same digest
 * gives the same id, for an operation whose every attempt must name one operation.
 * @throws RangeError when `digest` is shorter than 26 bytes
 */
export function operationIdOf(digest: Uint8Array): string {
  if (digest.length < RANDOM_LENGTH) throw new RangeError('a digest of at least 26 bytes');
  return `op_${base32Of(digest.subarray(0, RANDOM_LENGTH))}`;
}

/** A fresh operation id (`op_` + 26 base32 characters); also the workflow id. */
export function newOperationId(): string {
  return `op_${randomBase32(RANDOM_LENGTH)}`;
}

/** A fresh sandbox id (`sbx_` + 26 base32 characters). */
export function newSandboxId(): string {
  return `sbx_${randomBase32(RANDOM_LENGTH)}`;
}
