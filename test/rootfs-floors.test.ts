/**
 * Rootfs floors end to end (docs/configuration.md, "Templates"): a node's decisive refusal teaches the floor of
 * the template's image, and a later create below it is refused before 202 (no workflow, no pod);
 * declared floors; an image change forgets the learned floor; a non-decisive refusal teaches
 * nothing; two API instances over one database share the floor. A real dev server, a worker,
 * the simulated cluster over HTTP, SQLite.
 */
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRegistry } from '../src/api/metrics.js';
import { openStore } from '../src/store/index.js';
import {
  awaitOperation,
  bearer,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

/** The catalog of this suite: one template per test, so each test starts with no floor. */
const TEMPLATES = {
  base: { image: 'example.test/base:1' },
  replica: { image: 'example.test/replica:1' },
  moving: { image: 'example.test/moving:1' },
  flaky: { image: 'example.test/flaky:1' },
  unsized: { image: 'example.test/unsized:1' },
  keyed: { image: 'example.test/keyed:1' },
  prompt: { image: 'example.test/prompt:1' },
  forged: { image: 'example.test/forged:1' },
  halfopen: { image: 'example.test/halfopen:1' },
  declared: { image: 'example.test/declared:1', rootfs_mib: 600 },
};
/** The node's rootfs size per template (`unsized` is missing: the node refuses it unsized). */
const NODE_ROOTFS_MIB = {
  base: 451,
  replica: 451,
  moving: 451,
  flaky: 451,
  keyed: 451,
  prompt: 451,
  forged: 451,
  halfopen: 451,
  declared: 600,
};
const ENV = { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) };

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    stack: { cluster: { startupDelayMs: 100, rootfsMib: NODE_ROOTFS_MIB } },
    env: ENV,
  });
});
afterAll(async () => {
  await api?.stop();
});

function body(template: string, diskMib: number) {
  return { template, resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib } };
}

function post(app: Express, template: string, diskMib: number, route = '/v1/sandboxes') {
  return request(app).post(route).set(bearer(api.tenantA)).send(body(template, diskMib));
}

const podCreates = () =>
  api.stack.cluster.requestsWhere({ verb: 'create', resource: 'pods', namespace: 'sandboxes' })
    .length;

/** The ids of the create workflows visibility lists for this suite's tenant and a template. */
async function workflowsOf(template: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of api.stack.temporal.client.workflow.list({
    // Other suites share the dev server (and template names); the tenant is this suite's own.
    query: `TenantId = '${api.tenantA.id}' AND Template = '${template}'`,
  })) {
    ids.push(execution.workflowId);
  }
  return ids.sort();
}

/**
 * Proves no workflow was started for `template` besides `known`: starts one more create (a disk
 * above any floor), waits until visibility lists it, then expects exactly `known` + it. A
 * refused create's workflow, had it been started before, would be listed by then.
 */
async function expectOnlyWorkflows(template: string, known: string[]): Promise<void> {
  const control = await post(api.app, template, 4096);
  expect(control.status, control.text).toBe(202);
  const listed = await waitUntil(
    async () => {
      const ids = await workflowsOf(template);
      return ids.includes(control.body.id) ? ids : undefined;
    },
    { what: `workflow ${control.body.id} in visibility` },
  );
  expect(listed).toEqual([...known, control.body.id].sort());
  await awaitOperation(api.app, api.tenantA, control.body.id);
}

async function refusedByNode(template: string, diskMib: number): Promise<OperationBody> {
  const accepted = await post(api.app, template, diskMib);
  expect(accepted.status, accepted.text).toBe(202);
  return awaitOperation(api.app, api.tenantA, accepted.body.id);
}

async function catalogEntry(template: string, app = api.app) {
  const response = await request(app).get(`/v1/templates/${template}`).set(bearer(api.tenantA));
  expect(response.status, response.text).toBe(200);
  return response.body as { name: string; image: string; rootfs_floor: Record<string, unknown> };
}

async function refusedCount(template: string): Promise<number> {
  const metric = await apiRegistry.getSingleMetric('durable_sandbox_creates_refused_total')?.get();
  return (metric?.values ?? [])
    .filter((value) => value.labels.template === template)
    .reduce((sum, value) => sum + value.value, 0);
}

describe('learned rootfs floors', () => {
  it('the first refused create teaches the floor; the next is refused before 202 with no workflow and no pod', async () => {
    expect((await catalogEntry('base')).rootfs_floor).toEqual({
      source: 'unknown',
      rootfs_mib: null,
    });
    const first = await refusedByNode('base', 300);
    expect(first.error?.code).toBe('invalid_request');
    expect(first.error?.details).toMatchObject({ rootfs_mib: 451, node_name: expect.any(String) });

    const learned = await catalogEntry('base');
    expect(learned).toMatchObject({
      name: 'base',
      image: 'example.test/base:1',
      rootfs_floor: {
        source: 'learned',
        rootfs_mib: 451,
        operation_id: first.id,
        node_name: first.error?.details.node_name,
        reason: expect.stringContaining('cloned rootfs size 451 MiB'),
      },
    });
    const learnedAt = learned.rootfs_floor.learned_at as string;
    // Another tenant sees the floor's size only: not which create, node or time taught it.
    const other = await request(api.app).get('/v1/templates/base').set(bearer(api.tenantB));
    expect(other.body.rootfs_floor).toEqual({ source: 'learned', rootfs_mib: 451 });
    const otherRefused = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantB))
      .send(body('base', 300));
    expect(otherRefused.status, otherRefused.text).toBe(400);
    expect(otherRefused.body.error.message).toBe(
      'template base needs at least 451 MiB of disk (learned from a node refusal); resources.disk_mib is 300',
    );
    expect(otherRefused.body.error.details.rootfs_floor).toEqual({
      source: 'learned',
      rootfs_mib: 451,
    });
    expect(Date.parse(learnedAt)).not.toBeNaN();

    const podsBefore = podCreates();
    const refusedBefore = await refusedCount('base');
    for (const route of ['/v1/sandboxes', '/sync/v1/sandboxes']) {
      const started = Date.now();
      const refused = await post(api.app, 'base', 300, route);
      expect(refused.status, refused.text).toBe(400);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(refused.body.error.code).toBe('invalid_request');
      expect(refused.body.error.message).toBe(
        `template base needs at least 451 MiB of disk (learned from a node refusal at ${learnedAt} ` +
          `on node ${first.error?.details.node_name}); resources.disk_mib is 300`,
      );
      expect(refused.body.error.details).toMatchObject({
        template: 'base',
        image: 'example.test/base:1',
        rootfs_floor: { source: 'learned', rootfs_mib: 451, learned_at: learnedAt },
      });
    }
    expect(podCreates()).toBe(podsBefore);
    expect(await refusedCount('base')).toBe(refusedBefore + 2);
    // At the floor itself the create is accepted.
    const atFloor = await post(api.app, 'base', 451);
    expect(atFloor.status, atFloor.text).toBe(202);
    await awaitOperation(api.app, api.tenantA, atFloor.body.id);
    await expectOnlyWorkflows('base', [first.id, atFloor.body.id]);
  });

  it('the floor is stored before the refusal is visible: the same request sent again at once is refused before 202', async () => {
    const podsBefore = podCreates();
    const first = await post(api.app, 'prompt', 300, '/sync/v1/sandboxes');
    expect(first.status, first.text).toBe(400);
    expect(first.body.error.message).toMatch(/^the node refused the sandbox: /);
    // Learned at the decision (src/verdict/outcome-at-decision.ts), before the outcome a reader
    // sees: no wait for compensation, whose retirement learns it too.
    const stored = await api.stack.store.listRootfsFloors(['example.test/prompt:1']);
    expect(stored).toEqual([
      expect.objectContaining({
        template: 'prompt',
        rootfsMib: 451,
        operationId: first.headers['operation-id'],
        tenantId: api.tenantA.id,
        reason: 'cloned rootfs size 451 MiB',
      }),
    ]);
    const again = await post(api.app, 'prompt', 300, '/sync/v1/sandboxes');
    expect(again.status, again.text).toBe(400);
    expect(again.body.error.message).toMatch(/^template prompt needs at least 451 MiB of disk/);
    expect(podCreates()).toBe(podsBefore + 1);
  });

  it('a declared floor refuses before 202 and wins over a learned one', async () => {
    await api.stack.store.recordRootfsFloor({
      image: 'example.test/declared:1',
      template: 'declared',
      rootfsMib: 300,
      learnedAtMs: Date.now(),
      operationId: 'op_learnedbeforedeclaration0000',
      tenantId: api.tenantA.id,
      nodeName: 'node-x',
      reason: 'rootfs_size_mb=200 is smaller than cloned rootfs size 300 MiB',
    });
    const podsBefore = podCreates();
    const refused = await post(api.app, 'declared', 500);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.error.message).toBe(
      'template declared needs at least 600 MiB of disk (declared in SANDBOX_TEMPLATES); ' +
        'resources.disk_mib is 500',
    );
    expect(refused.body.error.details.rootfs_floor).toEqual({
      source: 'declared',
      rootfs_mib: 600,
    });
    expect((await catalogEntry('declared')).rootfs_floor).toEqual({
      source: 'declared',
      rootfs_mib: 600,
    });
    expect(podCreates()).toBe(podsBefore);
    await expectOnlyWorkflows('declared', []);
  });

  it("an image change forgets the learned floor: the new image's creates reach the node", async () => {
    await refusedByNode('moving', 300);
    expect((await post(api.app, 'moving', 300)).status).toBe(400);

    const moved = { ...TEMPLATES, moving: { image: 'example.test/moving:2' } };
    const app = api.appWith({ SANDBOX_TEMPLATES: JSON.stringify(moved) });
    // The worker's catalog changes with the API's (one SANDBOX_TEMPLATES): its pods run the image.
    api.stack.templates.moving = moved.moving;
    expect(await catalogEntry('moving', app)).toEqual({
      name: 'moving',
      image: 'example.test/moving:2',
      rootfs_floor: { source: 'unknown', rootfs_mib: null },
      default_ttl: null,
      max_ttl: null,
      warm_pool: null,
      run_as_root: false,
    });
    const accepted = await post(app, 'moving', 300);
    expect(accepted.status, accepted.text).toBe(202);
    const done = await awaitOperation(app, api.tenantA, accepted.body.id);
    expect(done.error?.code).toBe('invalid_request');
    // The new image's refusal taught its own floor.
    expect((await catalogEntry('moving', app)).rootfs_floor).toMatchObject({
      source: 'learned',
      rootfs_mib: 451,
      operation_id: accepted.body.id,
    });
  });

  it('a non-decisive refusal teaches nothing, nor a decisive one that states no rootfs size', async () => {
    const app = api.appWith({ ...ENV, CREATE_DEADLINE_MS: '3000' });
    api.stack.cluster.faults.refuseWith(
      'Unavailable',
      'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
    );
    try {
      const accepted = await post(app, 'flaky', 300);
      expect(accepted.status, accepted.text).toBe(202);
      const done = await awaitOperation(app, api.tenantA, accepted.body.id);
      expect(done.error?.code).toBe('pod_never_ready');
    } finally {
      api.stack.cluster.faults.refuseWith(null);
    }
    expect((await catalogEntry('flaky')).rootfs_floor.source).toBe('unknown');
    expect((await post(api.app, 'flaky', 300)).status).toBe(202);

    // `unsized` is not on the node: a decisive refusal whose reason names no rootfs size.
    const unsized = await refusedByNode('unsized', 300);
    expect(unsized.error?.message).toContain('is not present on node');
    expect((await catalogEntry('unsized')).rootfs_floor.source).toBe('unknown');
    expect((await post(api.app, 'unsized', 300)).status).toBe(202);
  });

  it('two API instances over one database share the floor', async () => {
    const secondStore = await openStore(api.stack.storeOptions);
    try {
      const second = api.appWith({}, { store: secondStore });
      // The second instance serves a create while the floor is unknown (a cache would keep that).
      const before = await post(second, 'replica', 4096);
      expect(before.status, before.text).toBe(202);
      await awaitOperation(second, api.tenantA, before.body.id);
      const first = await refusedByNode('replica', 300);
      expect(first.error?.code).toBe('invalid_request');
      const podsBefore = podCreates();
      const refused = await post(second, 'replica', 300);
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.error.details.rootfs_floor).toMatchObject({
        source: 'learned',
        rootfs_mib: 451,
        operation_id: first.id,
      });
      expect(podCreates()).toBe(podsBefore);
    } finally {
      await secondStore.close();
    }
  });

  it('keeps the Idempotency-Key rules: a refused request stores nothing, a used key replays', async () => {
    const key = `floor-${Date.now()}`;
    const send = (app: Express, template: string, diskMib: number) =>
      request(app)
        .post('/v1/sandboxes')
        .set(bearer(api.tenantA))
        .set('Idempotency-Key', key)
        .send(body(template, diskMib));
    // The create that teaches the floor was accepted with the key...
    const taught = await send(api.app, 'keyed', 300);
    expect(taught.status, taught.text).toBe(202);
    await awaitOperation(api.app, api.tenantA, taught.body.id);
    // ...so the same key and body replay it, although the body is now below the floor.
    const replay = await send(api.app, 'keyed', 300);
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body.id).toBe(taught.body.id);
    // Another body under the used key still conflicts.
    expect((await send(api.app, 'keyed', 200)).status).toBe(409);

    // A fresh key refused before 202 is not claimed: the same key and body are judged again.
    const freshKey = `${key}-fresh`;
    const sendFresh = (app: Express) =>
      request(app)
        .post('/v1/sandboxes')
        .set(bearer(api.tenantA))
        .set('Idempotency-Key', freshKey)
        .send(body('keyed', 300));
    expect((await sendFresh(api.app)).status).toBe(400);
    expect((await sendFresh(api.app)).status).toBe(400);
    expect(await api.stack.store.findIdempotencyKey(api.tenantA.id, freshKey)).toBeUndefined();
    const moved = { ...TEMPLATES, keyed: { image: 'example.test/keyed:2' } };
    api.stack.templates.keyed = moved.keyed;
    const accepted = await sendFresh(api.appWith({ SANDBOX_TEMPLATES: JSON.stringify(moved) }));
    expect(accepted.status, accepted.text).toBe(202);
    await awaitOperation(api.app, api.tenantA, accepted.body.id);
  });

  it('a forged floor heals: an old one lets one create through, which runs and forgets it; none is learned above that disk again', async () => {
    const image = TEMPLATES.forged.image;
    const forged = (learnedAtMs: number) => ({
      image,
      template: 'forged',
      rootfsMib: 1_048_576,
      learnedAtMs,
      operationId: 'op_forged',
      tenantId: api.tenantB.id,
      nodeName: 'sim-node-1',
      reason: 'cloned rootfs size 1048576 MiB',
    });
    // Young, it refuses before 202, as any floor does.
    expect(await api.stack.store.recordRootfsFloor(forged(Date.now()))).toBe(true);
    const young = await post(api.app, 'forged', 2048);
    expect(young.status, young.text).toBe(400);
    // An hour old (ROOTFS_FLOOR_PROBE_AFTER_MS), it lets one create through: the node runs it.
    await api.stack.store.deleteRootfsFloor(image);
    expect(await api.stack.store.recordRootfsFloor(forged(Date.now() - 3_600_000))).toBe(true);
    const probe = await post(api.app, 'forged', 2048);
    expect(probe.status, probe.text).toBe(202);
    expect((await awaitOperation(api.app, api.tenantA, probe.body.id)).status).toBe('succeeded');
    // It ran with 2048 MiB: the floor is forgotten, and the same forgery is not learned again.
    expect((await catalogEntry('forged')).rootfs_floor).toEqual({
      source: 'unknown',
      rootfs_mib: null,
    });
    expect(await api.stack.store.recordRootfsFloor(forged(Date.now()))).toBe(false);
    const after = await post(api.app, 'forged', 2048);
    expect(after.status, after.text).toBe(202);
    await awaitOperation(api.app, api.tenantA, after.body.id);
  });

  it('an old true floor lets one create through per hour (half-open), which the node refuses, teaching it anew', async () => {
    const image = TEMPLATES.halfopen.image;
    const learnedAtMs = Date.now() - 2 * 3_600_000;
    await api.stack.store.recordRootfsFloor({
      image,
      template: 'halfopen',
      rootfsMib: 451,
      learnedAtMs,
      operationId: 'op_old',
      tenantId: api.tenantA.id,
      nodeName: 'sim-node-1',
      reason: 'cloned rootfs size 451 MiB',
    });
    const podsBefore = podCreates();
    const [first, second] = [
      await post(api.app, 'halfopen', 300),
      await post(api.app, 'halfopen', 300),
    ];
    // One probe: the first reaches the node, the second is refused before 202.
    expect(first.status, first.text).toBe(202);
    expect(second.status, second.text).toBe(400);
    const refused = await awaitOperation(api.app, api.tenantA, first.body.id);
    expect(refused.error?.code).toBe('invalid_request');
    expect(podCreates()).toBe(podsBefore + 1);
    // The node's refusal taught the floor again: learned now, closed for another hour.
    const relearned = (await catalogEntry('halfopen')).rootfs_floor;
    expect(relearned).toMatchObject({
      source: 'learned',
      rootfs_mib: 451,
      operation_id: first.body.id,
    });
    expect(Date.parse(relearned.learned_at as string)).toBeGreaterThan(learnedAtMs);
    const third = await post(api.app, 'halfopen', 300);
    expect(third.status, third.text).toBe(400);
  });

  it('lists the catalog and answers 404 for an unknown template', async () => {
    const list = await request(api.app).get('/v1/templates').set(bearer(api.tenantA));
    expect(list.status).toBe(200);
    const names = (list.body.templates as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(Object.keys(TEMPLATES).sort());
    const missing = await request(api.app).get('/v1/templates/nope').set(bearer(api.tenantA));
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await request(api.app).get('/v1/templates')).status).toBe(401);
  });
});
