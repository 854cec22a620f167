/**
 * A long-poll without a gap (docs/api.md, "Long-poll"): every GET of an operation or a sandbox
 * answers an `ETag`; `If-None-Match` answers 304 while the resource is at a named version, and a
 * long-poll that names the version the caller last saw answers at once when the resource is
 * already past it, however long ago the change landed. Real dev server, real worker, the
 * simulated cluster over HTTP, a SQLite store (the store is not involved: the tag is a hash of
 * the JSON).
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityTagOf, noneMatchFails, parseIfNoneMatch } from '../src/api/entity-tag.js';
import { countingApp } from './support/counting-app.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
} from './support/api.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
  });
});
afterAll(async () => {
  await api?.stop();
});

function getOperation(id: string, query = '', ifNoneMatch?: string, app = api.app) {
  const get = request(app).get(`/v1/operations/${id}${query}`).set(bearer(api.tenantA));
  return ifNoneMatch === undefined ? get : get.set('If-None-Match', ifNoneMatch);
}

describe('If-None-Match as RFC 9110 §13.1.2 reads it', () => {
  const tag = entityTagOf({ id: 'op_x', done: false });

  it('tags a representation with a strong tag that changes with any field', () => {
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(entityTagOf({ id: 'op_x', done: false })).toBe(tag);
    expect(entityTagOf({ id: 'op_x', done: true })).not.toBe(tag);
  });

  it('matches a listed tag by weak comparison, and any tag for *', () => {
    expect(noneMatchFails(parseIfNoneMatch(tag)!, tag)).toBe(true);
    expect(noneMatchFails(parseIfNoneMatch(`"other", W/${tag}`)!, tag)).toBe(true);
    expect(noneMatchFails(parseIfNoneMatch('*')!, tag)).toBe(true);
    expect(noneMatchFails(parseIfNoneMatch('"other", "a,b"')!, tag)).toBe(false);
    expect(parseIfNoneMatch('"a,b"')).toEqual({ any: false, opaqueTags: ['"a,b"'] });
  });

  it('ignores a header that names no entity tag', () => {
    expect(parseIfNoneMatch(undefined)).toBeUndefined();
    expect(parseIfNoneMatch('not-a-tag')).toBeUndefined();
  });
});

describe('operation GET and long-poll with If-None-Match', () => {
  it('answers a change that landed between the GET and the long-poll at once, then 304 and waits past the new tag', async () => {
    api.stack.cluster.faults.neverReady(true);
    // Four failed pod deletes keep the cancelled create compensating (not done) for 15 s or
    // more (retries after 1, 2, 4 and 8 s), so the long-poll below meets a running operation.
    api.stack.cluster.faults.failNextRequests('DELETE', 'pods', 4, 500);
    try {
      const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
      const seen = await getOperation(op.id);
      expect(seen.status).toBe(200);
      const seenTag = seen.headers.etag as string;
      expect(seenTag).toBe(entityTagOf(seen.body));

      // Not past the tag: 304 at once without wait, 304 at the end of a short wait.
      const unchanged = await getOperation(op.id, '', seenTag);
      expect(unchanged.status).toBe(304);
      expect(unchanged.headers.etag).toBe(seenTag);
      expect(unchanged.text).toBe('');
      const waitedOut = await getOperation(op.id, '?wait=1s', seenTag);
      expect(waitedOut.status).toBe(304);

      // The change lands before the caller long-polls.
      const cancel = await request(api.app)
        .post(`/v1/operations/${op.id}/cancel`)
        .set(bearer(api.tenantA));
      expect(cancel.status, cancel.text).toBe(202);
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.status === 'cancelled',
      });

      const { app, seen: server } = countingApp(api, 'operation', op.id);
      const answered = await getOperation(op.id, '?wait=60s', seenTag, app);
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ status: 'cancelled', done: false });
      expect(answered.headers.etag).not.toBe(seenTag);
      expect(answered.headers.etag).toBe(entityTagOf(answered.body));
      // Answered from its first read: it never waited for a change.
      expect(server).toEqual({ reads: 1, wakes: 0 });

      // Naming the new tag, the long-poll waits until the operation is past it (compensation
      // ends it), answering 200 with the finished operation.
      const past = await getOperation(op.id, '?wait=60s', answered.headers.etag as string);
      expect(past.status).toBe(200);
      expect(past.body).toMatchObject({ status: 'cancelled', done: true, phase: 'finished' });
      expect(past.headers.etag).not.toBe(answered.headers.etag);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('answers 304 at once to a long-poll naming the tag of a finished operation', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
    await awaitOperation(api.app, api.tenantA, op.id);
    const done = await getOperation(op.id);
    const tag = done.headers.etag as string;
    const { app, seen: server } = countingApp(api, 'operation', op.id);
    const answered = await getOperation(op.id, '?wait=60s', `"other", W/${tag}`, app);
    expect(answered.status).toBe(304);
    expect(answered.headers.etag).toBe(tag);
    expect(server).toEqual({ reads: 1, wakes: 0 });
    expect((await getOperation(op.id, '', '*')).status).toBe(304);
    const stale = await getOperation(op.id, '', '"not-its-tag"');
    expect(stale.status).toBe(200);
    expect(stale.body.id).toBe(op.id);
  });

  it('answers If-None-Match: * with wait at once, reading once and waiting for nothing', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
      const { app, seen: server } = countingApp(api, 'operation', op.id);
      const answered = await getOperation(op.id, '?wait=60s', '*', app);
      expect(answered.status).toBe(304);
      expect(server).toEqual({ reads: 1, wakes: 0 });
      await request(api.app).delete(`/v1/sandboxes/${op.sandbox_id}`).set(bearer(api.tenantA));
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('keeps the next-change wait for a caller that sends no tag', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
    await awaitOperation(api.app, api.tenantA, op.id);
    const answered = await getOperation(op.id, '?wait=60s');
    expect(answered.status).toBe(200);
    expect(answered.body.done).toBe(true);
    expect(answered.headers.etag).toBe(entityTagOf(answered.body));
  });
});

describe('sandbox GET with If-None-Match', () => {
  it('answers 304 while the sandbox is at the named tag, and 200 with a new tag once it changes', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done.status).toBe('succeeded');
    const path = `/v1/sandboxes/${op.sandbox_id}`;
    const get = (ifNoneMatch?: string) => {
      const sent = request(api.app).get(path).set(bearer(api.tenantA));
      return ifNoneMatch === undefined ? sent : sent.set('If-None-Match', ifNoneMatch);
    };
    const first = await get();
    expect(first.status).toBe(200);
    const tag = first.headers.etag as string;
    expect(tag).toBe(entityTagOf(first.body));
    const unchanged = await get(tag);
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.etag).toBe(tag);
    // The origin evaluates the precondition whatever the request's cache directives, which are
    // for caches (RFC 9110 §13.2.1, RFC 9111 §5.2.1.4).
    const noCache = await get(tag).set('Cache-Control', 'no-cache');
    expect(noCache.status).toBe(304);

    const patched = await request(api.app)
      .patch(`${path}?update_mask=labels`)
      .set(bearer(api.tenantA))
      .send({ labels: { team: 'etag' } });
    expect(patched.status, patched.text).toBe(200);
    const changed = await get(tag);
    expect(changed.status).toBe(200);
    expect(changed.body.labels).toEqual({ team: 'etag' });
    expect(changed.headers.etag).not.toBe(tag);
    expect((await get(changed.headers.etag as string)).status).toBe(304);
  });
});
