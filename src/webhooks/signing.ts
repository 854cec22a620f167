/**
 * Signs a webhook per the Standard Webhooks specification with its own library
 * (`standardwebhooks`): headers `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256>`, one per secret. With
 * two secrets (during a rotation's grace period) the receiver's library accepts either, so a
 * receiver that still holds the old secret and one that holds the new both verify.
 */
import { Webhook } from 'standardwebhooks';

/** The three Standard Webhooks headers. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs `body` for message `id` at `at` with every secret.
 * @param secrets `whsec_…` secrets, at least one
 * @throws Error when `secrets` is empty, or the library's error for a malformed secret
 */
export function signWebhook(
  id: string,
  at: Date,
  body: string,
  secrets: readonly string[],
): SignedHeaders {
  if (secrets.length === 0) throw new Error('a webhook needs at least one secret to sign with');
  const signature = secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
}
