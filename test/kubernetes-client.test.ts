/**
 * Guards the `undici` override in package.json: @kubernetes/client-node 2.0.1 depends on
 * undici 8, which crashes at import on Node 20 (docs/production.md, "Node 20 and @kubernetes/client-node").
 * This imports the client
 * and opens a real watch against a scripted apiserver.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('@kubernetes/client-node on this Node version', () => {
  let server: Server;
  const requests: string[] = [];

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      requests.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      const pod = { kind: 'Pod', metadata: { name: 'p', uid: 'u1', resourceVersion: '7' } };
      res.end(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('imports and opens a watch that delivers events', async () => {
    const { port } = server.address() as AddressInfo;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const seen: Array<[string, string]> = [];
    const ended = new Promise<unknown>((resolve) => {
      void new Watch(kc).watch(
        '/api/v1/namespaces/sandboxes/pods',
        { fieldSelector: 'metadata.name=p' },
        (type, obj: { metadata: { uid: string } }) => seen.push([type, obj.metadata.uid]),
        resolve,
      );
    });
    expect(await ended).toBeFalsy();
    expect(seen).toEqual([['ADDED', 'u1']]);
    expect(requests[0]).toContain('watch=true');
    expect(requests[0]).toContain('fieldSelector=metadata.name%3Dp');
  });
});
