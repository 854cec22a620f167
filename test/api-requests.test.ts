/**
 * What the API asks of the apiserver and of Temporal on the create and read paths, counted where
 * they arrive: the simulated apiserver's request log (the API's SelfSubjectReview), and a counting
 * gRPC proxy in front of the dev server that the API's Temporal client goes through
 * (DescribeWorkflowExecution). Real dev server and worker, the simulated cluster over HTTP.
 *
 * - The cluster check is off the create path (src/api/readiness.ts): a create never waits for it,
 *   a probe that only times out does not turn creates away, a definite failure still does.
 * - Reads of an operation come from the store (src/api/operation-read.ts): a waiting create is never
 *   described; a row its workflow left behind is described once.
 */
import { Client, Connection } from '@temporalio/client';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../src/api/app.js';
import { createReadiness, READINESS_CACHE_MS, READINESS_MAX_AGE_MS } from '../src/api/readiness.js';
import { acceptedCreate, bearer, createBody, startApiStack, type ApiStack } from './support/api.js';
import { startGrpcCounter, type GrpcCounter } from './support/grpc-counter.js';
import { waitUntil } from '../tools/wait-until.js';

let api: ApiStack;
let counter: GrpcCounter;
let countedConnection: Connection;
let countedClient: Client;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
  counter = await startGrpcCounter(api.stack.temporal.address);
  countedConnection = await Connection.connect({ address: counter.address });
  countedClient = new Client({ connection: countedConnection });
});
afterAll(async () => {
  await countedConnection?.close();
  await counter?.close();
  await api?.stop();
});
afterEach(() => {
  vi.restoreAllMocks();
  api.stack.cluster.faults.delayResponses(0);
  api.stack.cluster.faults.rejectCredentials(false);
  api.stack.cluster.faults.neverReady(false);
});

/** The API's cluster checks (src/api/readiness.ts: one SelfSubjectReview each) since `sinceMs`. */
function clusterChecksSince(sinceMs: number) {
  return api.stack.cluster.requestsWhere({ resource: 'selfsubjectreviews', since: sinceMs });
}

/**
 * An app whose readiness runs on a clock the test moves (epoch ms), with each check given
 * `timeoutMs` (default the API's 2 s).
 */
function appOnClock(timeoutMs?: number) {
  const clock = { nowMs: Date.now() };
  const deps = { ...api.deps, readiness: undefined };
  const readiness = createReadiness(deps, { now: () => clock.nowMs, timeoutMs });
  return { app: createApp({ ...deps, readiness }), clock };
}

async function sandboxCount(): Promise<number> {
  return (await api.stack.store.listSandboxes(api.tenantA.id, { limit: 200 })).sandboxes.length;
}

describe('the cluster check is off the create path', () => {
  it('a create does not wait for the check: it answers 202 while the cluster check the stale report set off is unanswered', async () => {
    // The probes may wait 30 s; the apiserver takes 8 s to answer each request.
    const { app, clock } = appOnClock(30_000);
    expect((await request(app).get('/readyz')).status).toBe(200);
    api.stack.cluster.faults.delayResponses(8_000);
    clock.nowMs += READINESS_CACHE_MS + 1;
    const since = Date.now();
    await acceptedCreate(app, api.tenantA, createBody(2048));
    const reviews = clusterChecksSince(since);
    expect(reviews.length).toBeGreaterThan(0);
    // status 0: the apiserver had not answered them when the create was accepted.
    expect(reviews.map((review) => review.status)).toEqual(reviews.map(() => 0));
  });

  it('a probe that only times out keeps a pass of less than 30 s ago: creates go on, /readyz warns', async () => {
    const { app, clock } = appOnClock(1_000);
    // A first pass (on a loaded machine a 1 s probe may time out: measure again until one passes).
    await waitUntil(
      async () => {
        if ((await request(app).get('/readyz')).status === 200) return true;
        clock.nowMs += READINESS_MAX_AGE_MS;
        return undefined;
      },
      { timeoutMs: 60_000, what: 'a first pass' },
    );
    api.stack.cluster.faults.delayResponses(5_000);
    clock.nowMs += READINESS_CACHE_MS + 1;
    // The next read sets off a check that times out; its report replaces the one before.
    const ready = await waitUntil(
      async () => {
        const read = await request(app).get('/readyz').set(bearer(api.tenantA));
        const warnings = (read.body.warnings as string[] | undefined) ?? [];
        return warnings.some((w) => w.includes('did not answer within 1000 ms')) ? read : undefined;
      },
      { timeoutMs: 30_000, what: 'a report with the timed-out probe' },
    );
    expect(ready.status, ready.text).toBe(200);
    await acceptedCreate(app, api.tenantA, createBody(2048));
  });

  it('a definite failure still refuses creates once the background check saw it, storing nothing', async () => {
    const { app, clock } = appOnClock();
    expect((await request(app).get('/readyz')).status).toBe(200);
    api.stack.cluster.faults.rejectCredentials(true);
    clock.nowMs += READINESS_CACHE_MS + 1;
    // The first read after the cache sets off the check; its answer replaces the report.
    await waitUntil(async () => (await request(app).get('/readyz')).status === 503, {
      timeoutMs: 30_000,
      what: '/readyz 503',
    });
    const before = await sandboxCount();
    const refused = await request(app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(refused.status, refused.text).toBe(503);
    expect(refused.body.error.message).toMatch("refused the kubeconfig's credentials");
    expect(await sandboxCount()).toBe(before);
  });

  it('a report older than 30 s is measured again before a create is accepted', async () => {
    const { app, clock } = appOnClock();
    expect((await request(app).get('/readyz')).status).toBe(200);
    api.stack.cluster.faults.rejectCredentials(true);
    clock.nowMs += READINESS_MAX_AGE_MS;
    const refused = await request(app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(refused.status, refused.text).toBe(503);
    expect(refused.body.error.message).toMatch("refused the kubeconfig's credentials");
  });

  it('creates at once cost no cluster check while the report is fresh', async () => {
    const { app } = appOnClock();
    expect((await request(app).get('/readyz')).status).toBe(200);
    const since = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        request(app).post('/v1/sandboxes').set(bearer(api.tenantA)).send(createBody(2048)),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(202));
    expect(clusterChecksSince(since)).toHaveLength(0);
  });
});

describe('operation reads come from the store', () => {
  /** An app whose Temporal client goes through the counting proxy. */
  function countedApp() {
    return createApp({ ...api.deps, temporal: countedClient });
  }

  /** Starts a create whose pod never gets an IP and returns its id once it waits. */
  async function waitingCreate(app: ReturnType<typeof createApp>): Promise<string> {
    api.stack.cluster.faults.neverReady(true);
    const { id } = await acceptedCreate(app, api.tenantA, createBody(2048));
    await waitUntil(
      async () => {
        const read = await request(app).get(`/v1/operations/${id}`).set(bearer(api.tenantA));
        return read.body.phase === 'waiting_for_ip';
      },
      { timeoutMs: 60_000, what: 'phase waiting_for_ip' },
    );
    return id;
  }

  /** Moves the API's clock `ms` ahead (the reads' view of how long the row went unwritten). */
  function later(ms: number): void {
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + ms);
  }

  it('reading a waiting create, unwritten for longer than 30 s but before its deadline, sends Temporal no describe', async () => {
    const app = countedApp();
    const id = await waitingCreate(app);
    later(45_000); // past RESYNC_AFTER_MS, before the 60 s deadline
    const before = counter.count('DescribeWorkflowExecution');
    for (let read = 0; read < 10; read += 1) {
      const answer = await request(app).get(`/v1/operations/${id}`).set(bearer(api.tenantA));
      expect(answer.body.phase).toBe('waiting_for_ip');
    }
    expect(counter.count('DescribeWorkflowExecution') - before).toBe(0);
  });

  it('a row its workflow left behind (terminated) is re-synced with one describe', async () => {
    const app = countedApp();
    const id = await waitingCreate(app);
    await api.stack.temporal.client.workflow.getHandle(id).terminate('test');
    later(60_000 + 31_000); // past the deadline by more than RESYNC_AFTER_MS
    const before = counter.count('DescribeWorkflowExecution');
    const statuses: string[] = [];
    for (let read = 0; read < 5; read += 1) {
      const answer = await request(app).get(`/v1/operations/${id}`).set(bearer(api.tenantA));
      statuses.push(answer.body.status as string);
    }
    expect(statuses).toEqual(Array(5).fill('failed'));
    expect(counter.count('DescribeWorkflowExecution') - before).toBe(1);
  });

  it('an overdue row whose workflow still runs is described at most once per 30 s, however often it is read', async () => {
    const app = countedApp();
    const id = await waitingCreate(app);
    later(60_000 + 31_000);
    const before = counter.count('DescribeWorkflowExecution');
    for (let read = 0; read < 5; read += 1) {
      const answer = await request(app).get(`/v1/operations/${id}`).set(bearer(api.tenantA));
      expect(answer.body.status).toBe('running');
    }
    expect(counter.count('DescribeWorkflowExecution') - before).toBe(1);
  });
});
