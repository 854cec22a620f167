/**
 * The sandbox long-poll (docs/api.md, "Long-poll"): `GET /v1/sandboxes/{id}?wait=` with
 * `If-None-Match` answers at once when the sandbox is already past the named tag, is woken by the
 * store's push when it changes (its labels, its delete), and answers 304 at the timeout. What the
 * server did is counted on the store (its reads of the sandbox, the wake-ups of its waits), not
 * on a clock. Real dev server, real worker, the simulated cluster over HTTP, the store on SQLite
 * and (with TEST_DATABASE_URL) PostgreSQL.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityTagOf } from '../src/api/entity-tag.js';
import { sandboxLongPollsHeld } from '../src/api/sandbox-long-poll.js';
import { waitUntil } from '../tools/wait-until.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
} from './support/api.js';
import { countingApp } from './support/counting-app.js';
import { storeBackends } from './support/store.js';

describe.each(storeBackends())('the sandbox long-poll on $name', (backend) => {
  const databaseUrl = backend.name === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
  let api: ApiStack;
  beforeAll(async () => {
    api = await startApiStack({
      stack: { cluster: { startupDelayMs: 50 }, learnRootfsFloors: false, databaseUrl },
    });
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
  });

  /** A running sandbox of tenant A. */
  async function running(): Promise<string> {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(2048));
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    return op.sandbox_id;
  }

  function get(id: string, query = '', ifNoneMatch?: string, app = api.app) {
    const sent = request(app).get(`/v1/sandboxes/${id}${query}`).set(bearer(api.tenantA));
    return ifNoneMatch === undefined ? sent : sent.set('If-None-Match', ifNoneMatch);
  }

  function label(id: string, value: string) {
    return request(api.app)
      .patch(`/v1/sandboxes/${id}?update_mask=labels`)
      .set(bearer(api.tenantA))
      .send({ labels: { step: value } });
  }

  it('answers at once when a change landed between the GET and the long-poll', async () => {
    const id = await running();
    const seenTag = (await get(id)).headers.etag as string;
    expect((await label(id, 'before-poll')).status).toBe(200);
    const { app, seen } = countingApp(api, 'sandbox', id);
    const answered = await get(id, '?wait=60s', seenTag, app);
    expect(answered.status).toBe(200);
    expect(answered.body.labels).toEqual({ step: 'before-poll' });
    expect(answered.headers.etag).toBe(entityTagOf(answered.body));
    expect(answered.headers.etag).not.toBe(seenTag);
    // From its first read, without waiting.
    expect(seen).toEqual({ reads: 1, wakes: 0 });
  });

  it('is woken by a label change while it waits, and answers 304 at the timeout when nothing changes', async () => {
    const id = await running();
    const tag = (await get(id)).headers.etag as string;
    // On PostgreSQL the create's own last writes are announced after their commit (docs/
    // production.md, "Operation notifications on PostgreSQL"): on a loaded runner that
    // announcement may reach a poll begun after the commit. A wake without a change answers
    // nothing; the quiet poll is taken again until one hears none, at most 3 times.
    let quiet = countingApp(api, 'sandbox', id);
    let unchanged = await get(id, '?wait=1s', tag, quiet.app);
    for (let retry = 0; retry < 3 && quiet.seen.wakes > 0; retry++) {
      expect(unchanged.status).toBe(304);
      quiet = countingApp(api, 'sandbox', id);
      unchanged = await get(id, '?wait=1s', tag, quiet.app);
    }
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.etag).toBe(tag);
    expect(quiet.seen.wakes).toBe(0);

    const { app, seen } = countingApp(api, 'sandbox', id);
    const poll = get(id, '?wait=60s', tag, app).then((response) => response);
    await waitUntil(() => sandboxLongPollsHeld() === 1, { what: 'the sandbox long-poll held' });
    expect((await label(id, 'during-poll')).status).toBe(200);
    const answered = await poll;
    expect(answered.status).toBe(200);
    expect(answered.body.labels).toEqual({ step: 'during-poll' });
    // Woken by the store's push, not by its 60 s timeout.
    expect(seen.wakes).toBeGreaterThanOrEqual(1);
  });

  it('is woken by the delete of the sandbox while it waits', async () => {
    const id = await running();
    const tag = (await get(id)).headers.etag as string;
    const { app, seen } = countingApp(api, 'sandbox', id);
    const poll = get(id, '?wait=60s', tag, app).then((response) => response);
    await waitUntil(() => sandboxLongPollsHeld() === 1, { what: 'the sandbox long-poll held' });
    const deleted = await request(api.app).delete(`/v1/sandboxes/${id}`).set(bearer(api.tenantA));
    expect(deleted.status, deleted.text).toBe(202);
    const answered = await poll;
    expect(answered.status).toBe(200);
    expect(answered.headers.etag).not.toBe(tag);
    expect(seen.wakes).toBeGreaterThanOrEqual(1);
    await awaitOperation(api.app, api.tenantA, deleted.body.id as string);
  });
});
