/**
 * One webhook POST (docs/webhooks.md, "Delivery"): resolve the URL's host, refuse it when any
 * address it resolves to is refused (src/webhooks/ssrf-guard.ts), connect to exactly the vetted
 * addresses, send the signed body, and read at most `maxResponseBytes` of the answer within
 * `timeoutMs` for the whole exchange. Redirects are never followed (node:http does not follow
 * them; a 3xx is a failed attempt).
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import {
  vetWebhookTarget,
  WebhookTargetRefusedError,
  type WebhookAddressGuard,
} from './ssrf-guard.js';

export { WebhookTargetRefusedError };

/** Limits of one attempt. */
export interface WebhookHttpLimits {
  /** The whole exchange (DNS, connect, request, response), in ms. */
  timeoutMs: number;
  /** Bytes of the response body read at most; the rest is not read (the socket is closed). */
  maxResponseBytes: number;
}

/** What the receiver answered. */
export interface WebhookHttpResponse {
  status: number;
  /** The first bytes of the body (at most `maxResponseBytes`), as UTF-8. */
  body: string;
  /** Whether the body was longer than the cap. */
  truncated: boolean;
}

/**
 * POSTs `body` with `headers` to `url`.
 * @returns the receiver's answer, whatever its status
 * @throws WebhookTargetRefusedError when the scheme is not http(s) or an address is refused
 * @throws the DNS or socket error, or an AbortError (`TimeoutError`) past `timeoutMs`
 */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  guard: WebhookAddressGuard,
  limits: WebhookHttpLimits,
): Promise<WebhookHttpResponse> {
  const target = new URL(url);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  const addresses = await vetWebhookTarget(target, guard, signal);
  // Connect only to the addresses just checked, whatever DNS answers next.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  const transport = target.protocol === 'https:' ? https : http;
  return new Promise<WebhookHttpResponse>((resolve, reject) => {
    const request = transport.request(
      target,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
        lookup: pinned,
        agent: false,
        signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        const finish = () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            truncated,
          });
        response.on('data', (chunk: Buffer) => {
          const room = limits.maxResponseBytes - size;
          if (chunk.length > room) {
            chunks.push(chunk.subarray(0, Math.max(0, room)));
            size = limits.maxResponseBytes;
            truncated = true;
            finish();
            response.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        response.on('end', finish);
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
