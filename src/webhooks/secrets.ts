/**
 * Webhook signing secrets and endpoint ids. A secret is `whsec_` + base64 of 32 random bytes,
 * the form the Standard Webhooks specification ("Signature scheme") and its libraries take
 * (`new Webhook('whsec_…')` strips the prefix and decodes the rest as the HMAC-SHA256 key).
 */
import { randomBytes } from 'node:crypto';

/** Random bytes of a secret: 32 (the specification allows 24 to 64). */
export const SECRET_BYTES = 32;

/** A fresh signing secret, `whsec_` + base64 of {@link SECRET_BYTES} random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** Matches an endpoint id, `whe_` + 26 base32 characters (as contract/ids.ts builds the others). */
export const WEBHOOK_ENDPOINT_ID = /^whe_[a-z2-7]{26}$/;

/** A fresh endpoint id (`whe_` + 26 random base32 characters, 130 bits). */
export function newWebhookEndpointId(): string {
  return `whe_${Array.from(randomBytes(26), (byte) => ALPHABET[byte & 31]).join('')}`;
}

/** A fresh delivery-attempt id (`whd_` + 26 random base32 characters). */
export function newWebhookDeliveryId(): string {
  return `whd_${Array.from(randomBytes(26), (byte) => ALPHABET[byte & 31]).join('')}`;
}
