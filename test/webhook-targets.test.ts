/**
 * Where a webhook may go (src/webhooks/ssrf-guard.ts, src/webhooks/http-delivery.ts): the refused
 * ranges as a table, the operator's allow-list, WEBHOOK_* configuration, and the limits of one
 * POST (no redirect followed, response size cap, timeout) against a loopback server.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { postWebhook, WebhookTargetRefusedError } from '../src/webhooks/http-delivery.js';
import { WebhookAddressGuard } from '../src/webhooks/ssrf-guard.js';

describe('WebhookAddressGuard', () => {
  const guard = new WebhookAddressGuard();
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.2.3.4', 'private'],
    ['172.31.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd00:ec2::254', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['100.100.100.200', 'shared address space'],
    ['0.0.0.0', 'this network'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['64:ff9b::a00:1', 'NAT64'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(guard.refusal(address)).toContain(reason);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1', '11.0.0.1'])(
    'lets %s through',
    (address) => {
      expect(guard.refusal(address)).toBeNull();
    },
  );

  it('lets an allow-listed range through, and nothing beside it', () => {
    const allowing = new WebhookAddressGuard(['10.1.0.0/16', '127.0.0.1', 'fd00:1::/64']);
    expect(allowing.refusal('10.1.2.3')).toBeNull();
    expect(allowing.refusal('127.0.0.1')).toBeNull();
    expect(allowing.refusal('::ffff:127.0.0.1')).toBeNull();
    expect(allowing.refusal('fd00:1::5')).toBeNull();
    expect(allowing.refusal('10.2.0.1')).toBe('private');
    expect(allowing.refusal('127.0.0.2')).toBe('loopback');
    expect(allowing.refusal('169.254.169.254')).toContain('link-local');
  });
});

describe('WEBHOOK_* configuration', () => {
  it('reads the allow-list, the timeout, the size cap and the grace period', () => {
    const config = loadConfig({
      WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/8, fd00::/8',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_MAX_RESPONSE_BYTES: '1024',
      WEBHOOK_SECRET_GRACE_MS: '60000',
    });
    expect(config.webhooks).toEqual({
      allowedCidrs: ['10.0.0.0/8', 'fd00::/8'],
      timeoutMs: 2000,
      maxResponseBytes: 1024,
      secretGraceMs: 60000,
    });
    expect(loadConfig({}).webhooks).toEqual({
      allowedCidrs: [],
      timeoutMs: 10_000,
      maxResponseBytes: 65_536,
      secretGraceMs: 86_400_000,
    });
  });

  it.each(['10.0.0.0/33', 'example.com/8', '10.0.0.0/8/1', '::1/129'])(
    'refuses WEBHOOK_ALLOWED_CIDRS=%s naming the variable',
    (raw) => {
      expect(() => loadConfig({ WEBHOOK_ALLOWED_CIDRS: raw })).toThrow(ConfigError);
      expect(() => loadConfig({ WEBHOOK_ALLOWED_CIDRS: raw })).toThrow(/^WEBHOOK_ALLOWED_CIDRS:/);
    },
  );

  it('refuses a timeout above a minute', () => {
    expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: '60001' })).toThrow(/^WEBHOOK_TIMEOUT_MS:/);
  });
});

describe('postWebhook', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  });

  async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
    server = createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  }
  const allowLoopback = new WebhookAddressGuard(['127.0.0.1/32']);
  const limits = { timeoutMs: 2_000, maxResponseBytes: 1024 };

  it('refuses a loopback URL when it is not allow-listed, before connecting', async () => {
    let hits = 0;
    const url = await serve((_req, res) => {
      hits += 1;
      res.end();
    });
    await expect(postWebhook(url, {}, '{}', new WebhookAddressGuard(), limits)).rejects.toThrow(
      WebhookTargetRefusedError,
    );
    await expect(
      postWebhook(
        url.replace('127.0.0.1', 'localhost'),
        {},
        '{}',
        new WebhookAddressGuard(),
        limits,
      ),
    ).rejects.toThrow(/localhost resolves to .* \(loopback\)/);
    expect(hits).toBe(0);
  });

  it('refuses a scheme other than http and https', async () => {
    await expect(
      postWebhook('file:///etc/passwd', {}, '{}', allowLoopback, limits),
    ).rejects.toThrow(/scheme file:/);
  });

  it('reads at most the size cap of the answer', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.end('x'.repeat(1024 * 1024));
    });
    const answer = await postWebhook(url, {}, '{}', allowLoopback, limits);
    expect(answer).toMatchObject({ status: 200, truncated: true });
    expect(answer.body.length).toBe(1024);
  });

  it('gives up at the timeout on a receiver that never answers', async () => {
    const url = await serve(() => undefined);
    const started = Date.now();
    await expect(
      postWebhook(url, {}, '{}', allowLoopback, { ...limits, timeoutMs: 300 }),
    ).rejects.toThrow(/aborted|timeout/i);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('answers a redirect as it is, without following it', async () => {
    let followed = false;
    const url = await serve((req, res) => {
      if (req.url === '/elsewhere') followed = true;
      res.writeHead(302, { location: '/elsewhere' }).end();
    });
    const answer = await postWebhook(url, {}, '{}', allowLoopback, limits);
    expect(answer.status).toBe(302);
    expect(followed).toBe(false);
  });
});
