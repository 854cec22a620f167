/**
 * The event feed (`GET /v1/events`, docs/webhooks.md, "The event feed") against the dev server, the simulated cluster
 * and the store on SQLite and (with TEST_DATABASE_URL) PostgreSQL: from a cursor, across a new
 * app over the same store, it serves every event of a create, an expiry and a lost pod once, with
 * the ids and bodies webhooks carry (the `sandbox.deleted` cause included); a tenant sees only its
 * own; a cursor of another tenant or filter, or a forged one, answers 400; the long-poll answers
 * when an event is written and reads the store once per wake-up, never on a clock.
 */
import { Writable } from 'node:stream';
import request from 'supertest';
import { DurableSandboxClient } from '../clients/typescript/src/index.js';
import { run } from '../clients/cli/program.js';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.js';
import { sweepOrphanPods } from '../src/worker/orphan-sweeper.js';
import { waitUntil } from '../tools/wait-until.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type TestTenant,
} from './support/api.js';
import { storeBackends } from './support/store.js';

const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  leased: { image: 'ghcr.io/durable-sandbox/base:1', default_ttl: '2s', max_ttl: '600s' },
};

interface EventBody {
  id: string;
  type: string;
  timestamp: string;
  data: { id: string; state: string; delete_cause?: string; failure: { code: string } | null };
}
interface EventPage {
  events: EventBody[];
  next_cursor: string;
}

async function page(app: Express, who: TestTenant, query: Record<string, string> = {}) {
  const response = await request(app).get('/v1/events').query(query).set(bearer(who));
  expect(response.status, response.text).toBe(200);
  return response.body as EventPage;
}

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe.each(storeBackends())('the event feed on $name', (backend) => {
  const databaseUrl = backend.name === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
  let api: ApiStack;
  beforeAll(async () => {
    api = await startApiStack({
      env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
      stack: {
        cluster: { startupDelayMs: 50, rootfsMib: { base: 451, leased: 451 } },
        learnRootfsFloors: false,
        databaseUrl,
      },
    });
  });
  afterAll(async () => {
    await api?.stop();
  });

  /** Creates a sandbox as tenant A and waits until it runs; returns its id. */
  async function running(template: string): Promise<string> {
    const created = await acceptedCreate(api.app, api.tenantA, createBody(2048, { template }));
    const done = await awaitOperation(api.app, api.tenantA, created.id);
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    return created.sandbox_id;
  }

  it('serves every event of a create, an expiry and a lost pod once, from a cursor, across a new app', async () => {
    // Read before anything happened: the cursor starts here.
    const start = await page(api.app, api.tenantA, { limit: '2' });
    expect(start.events).toEqual([]);

    const expiring = await running('leased');
    const losing = await running('base');
    // Its pod vanishes; the sweep marks it lost; then the caller deletes it.
    const pod = (await api.stack.store.getSandboxById(losing))!.pod;
    await api.stack.kubernetes.core.deleteNamespacedPod({
      name: pod.name!,
      namespace: api.stack.namespace,
    });
    expect((await sweepOrphanPods({ ...api.stack, graceMs: 0 })).lost).toEqual([losing]);
    const deleted = await request(api.app)
      .delete(`/v1/sandboxes/${losing}`)
      .set(bearer(api.tenantA));
    expect(deleted.status, deleted.text).toBe(202);

    // Two events per page on the first app; then a new app over the same store goes on.
    const seen: EventBody[] = [];
    const first = await page(api.app, api.tenantA, { after: start.next_cursor, limit: '2' });
    seen.push(...first.events);
    const restarted = api.appWith({});
    let cursor = first.next_cursor;
    await waitUntil(
      async () => {
        const next = await page(restarted, api.tenantA, { after: cursor, limit: '2' });
        seen.push(...next.events);
        cursor = next.next_cursor;
        return seen.length >= 5 ? true : undefined;
      },
      { timeoutMs: 60_000, what: 'the five events', intervalMs: 200 },
    );
    expect((await page(restarted, api.tenantA, { after: cursor })).events).toEqual([]);

    const of = (sandbox: string) =>
      seen.filter((e) => e.data.id === sandbox).map((e) => [e.type, e.data.delete_cause]);
    expect(of(expiring)).toEqual([
      ['sandbox.running', undefined],
      ['sandbox.deleted', 'expired'],
    ]);
    expect(of(losing)).toEqual([
      ['sandbox.running', undefined],
      ['sandbox.lost', undefined],
      ['sandbox.deleted', 'lost'],
    ]);
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    // The ids and bodies webhooks carry.
    for (const event of seen) {
      const stored = await api.stack.store.webhooks.getEvent(event.id);
      const { id, ...body } = event;
      expect(JSON.parse(stored!.payload), id).toEqual(body);
    }
  });

  it("gives a tenant only its own events, and refuses another's cursor", async () => {
    await api.stack.store.webhooks.recordEvent({
      id: `evt_mine_${backend.name}`,
      tenant: api.tenantA.id,
      sandboxId: 'sbx_mine',
      type: 'sandbox.failed',
      payload: JSON.stringify({
        type: 'sandbox.failed',
        timestamp: new Date().toISOString(),
        data: {},
      }),
    });
    const mine = await page(api.app, api.tenantA);
    expect(mine.events.length).toBeGreaterThan(0);
    expect((await page(api.app, api.tenantB)).events).toEqual([]);
    const theirs = await request(api.app)
      .get('/v1/events')
      .query({ after: mine.next_cursor })
      .set(bearer(api.tenantB));
    expect(theirs.status, theirs.text).toBe(400);
    expect(theirs.body.error).toMatchObject({ code: 'invalid_request' });
    expect(theirs.body.error.message).toMatch(/^query\.after was issued to another tenant/);
  });

  it('answers 400 for a forged cursor and for a cursor of another filter', async () => {
    const forged = await request(api.app)
      .get('/v1/events')
      .query({ after: Buffer.from('[1,0,"x"]').toString('base64url') })
      .set(bearer(api.tenantA));
    expect(forged.status, forged.text).toBe(400);
    const garbage = await request(api.app)
      .get('/v1/events')
      .query({ after: 'not-a-cursor' })
      .set(bearer(api.tenantA));
    expect(garbage.status, garbage.text).toBe(400);
    expect(garbage.body.error.message).toBe('query.after is not a cursor this service issued');
    const unfiltered = await page(api.app, api.tenantA);
    const filtered = await request(api.app)
      .get('/v1/events')
      .query({ after: unfiltered.next_cursor, type: 'sandbox.lost' })
      .set(bearer(api.tenantA));
    expect(filtered.status, filtered.text).toBe(400);
    // With its own filter, a cursor reads on.
    const lost = await page(api.app, api.tenantA, { type: 'sandbox.lost' });
    expect(lost.events.map((e) => e.type)).toEqual(['sandbox.lost']);
    expect(
      (await page(api.app, api.tenantA, { type: 'sandbox.lost', after: lost.next_cursor })).events,
    ).toEqual([]);
  });

  it('long-polls: answers when an event is written, else empty at the timeout, reading the store only when woken', async () => {
    let reads = 0;
    const store = api.stack.store;
    const counting: Store = {
      ...store,
      events: {
        list: (tenant, query) => {
          reads += 1;
          return store.events.list(tenant, query);
        },
        waitForEvent: (tenant, timeoutMs, signal) =>
          store.events.waitForEvent(tenant, timeoutMs, signal),
      },
    };
    const app = api.appWith({}, { store: counting });

    // Nothing happens: one read, then an empty page at the timeout.
    const cursorB = (await page(app, api.tenantB)).next_cursor;
    reads = 0;
    const startedAt = Date.now();
    const empty = await page(app, api.tenantB, { after: cursorB, wait: '2s' });
    expect(empty).toEqual({ events: [], next_cursor: cursorB });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_900);
    expect(reads).toBe(1);

    // An event is written while the poll waits: it answers with it, after one more read.
    const cursorA = (await page(app, api.tenantA)).next_cursor;
    reads = 0;
    const polled = page(app, api.tenantA, { after: cursorA, wait: '30s' });
    await waitUntil(async () => (reads === 1 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the first read',
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(reads).toBe(1);
    const body = {
      type: 'sandbox.running',
      timestamp: new Date().toISOString(),
      data: { id: 'sbx_poll' },
    };
    await store.webhooks.recordEvent({
      id: `evt_poll_${backend.name}`,
      tenant: api.tenantA.id,
      sandboxId: 'sbx_poll',
      type: 'sandbox.running',
      payload: JSON.stringify(body),
    });
    const answered = await polled;
    expect(answered.events).toEqual([{ id: `evt_poll_${backend.name}`, ...body }]);
    expect(reads).toBe(2);
  });

  it('the client follows events as an async iterator, and the CLI follows them until Ctrl-C', async () => {
    const { url, close } = await api.listen();
    try {
      const client = new DurableSandboxClient({ baseUrl: url, token: api.tenantA.token });
      const start = await client.listEvents({ types: ['sandbox.running'] });
      const interrupt = new AbortController();
      const stdout = new Capture();
      const stderr = new Capture();
      const env = { DURABLE_SANDBOX_URL: url, DURABLE_SANDBOX_TOKEN: api.tenantA.token };
      const following = run(
        ['-o', 'json', 'events', '-f', '--type', 'sandbox.running', '--after', start.next_cursor],
        { stdout, stderr, env, signal: interrupt.signal },
      );
      const iterated: string[] = [];
      const followed = (async () => {
        for await (const event of client.followEvents(
          { after: start.next_cursor, types: ['sandbox.running'] },
          { waitS: 5 },
        )) {
          iterated.push(event.data.id);
          break;
        }
      })();
      const sandbox = await running('base');
      await followed;
      expect(iterated).toEqual([sandbox]);
      await waitUntil(async () => (stdout.text.includes(sandbox) ? true : undefined), {
        timeoutMs: 30_000,
        what: 'the CLI printing the event',
      });
      interrupt.abort('SIGINT');
      expect(await following).toBe(130);
      const printed = stdout.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as EventBody);
      expect(printed.map((e) => [e.type, e.data.id])).toEqual([['sandbox.running', sandbox]]);
      const resume =
        /Resume: npx durable-sandbox events -f --type sandbox.running --after (\S+)/.exec(
          stderr.text,
        );
      expect(resume, stderr.text).not.toBeNull();
      // From the printed cursor, nothing is repeated.
      const again = new Capture();
      const code = await run(['events', '--type', 'sandbox.running', '--after', resume![1]!], {
        stdout: again,
        stderr: new Capture(),
        env,
      });
      expect(code).toBe(0);
      expect(again.text).toBe('');
    } finally {
      await close();
    }
  });

  // Last: it purges every event but the newest, as the retention Schedule would.
  it('answers 410 cursor_expired for a cursor older than the kept events, and reads on from the oldest kept', async () => {
    const record = (n: number) =>
      api.stack.store.webhooks.recordEvent({
        id: `evt_gone_${backend.name}_${n}`,
        tenant: api.tenantA.id,
        sandboxId: 'sbx_gone',
        type: 'sandbox.failed',
        payload: JSON.stringify({ type: 'sandbox.failed', timestamp: '', data: { n } }),
      });
    await record(1);
    const before = await page(api.app, api.tenantA);
    await record(2);
    await record(3);
    const cutoff = new Date(Date.now() + 60_000).toISOString();
    while ((await api.stack.store.retention.purgeBatch('events', cutoff, 1_000)) > 0);
    const expired = await request(api.app)
      .get('/v1/events')
      .query({ after: before.next_cursor })
      .set(bearer(api.tenantA));
    expect(expired.status, expired.text).toBe(410);
    expect(expired.body.error).toMatchObject({ code: 'cursor_expired' });
    // From the oldest kept event: the newest, kept so numbering goes on after it.
    const fresh = await page(api.app, api.tenantA);
    expect(fresh.events.map((event) => event.id)).toEqual([`evt_gone_${backend.name}_3`]);
    expect((await page(api.app, api.tenantA, { after: fresh.next_cursor })).events).toEqual([]);
  });
});
