/**
 * A cluster the service cannot use is found out: `/readyz` answers 503 naming what is wrong
 * (unreachable, credentials refused, a kubeconfig client-node refuses), creates answer 503
 * `unavailable` naming it without storing a sandbox, and a create already running ends at once
 * instead of retrying until its deadline. Each process checks its own needs: the API needs no
 * permission (one SelfSubjectReview proves who it is), the worker the Role of deploy/rbac.yaml
 * (one SelfSubjectAccessReview per verb). Over HTTP to the simulated apiserver and the run's dev
 * server.
 */
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createApp } from '../src/api/app.js';
import { operationErrorOf } from '../src/api/failures.js';
import { NOT_READY_MESSAGE } from '../src/api/handlers/health.js';
import { createKubernetesClient, type KubernetesClient } from '../src/kubernetes/client.js';
import {
  API_PERMISSIONS,
  WORKER_PERMISSIONS,
  checkCluster,
} from '../src/kubernetes/cluster-check.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { uniqueTaskQueue } from './support/temporal.js';
import { bearer, createBody, startApiStack, type ApiStack } from './support/api.js';
import { startCreate, settle } from './support/creates.js';
import { withSandboxWorker } from './support/worker.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
});
afterAll(async () => {
  await api?.stop();
});
afterEach(() => {
  api.stack.cluster.faults.deny('create', 'pods', false);
  api.stack.cluster.faults.rejectCredentials(false);
});

function appOver(kubernetes: KubernetesClient) {
  return createApp({ ...api.deps, kubernetes });
}

async function expectUnusable(app: ReturnType<typeof createApp>, problem: string | RegExp) {
  // Without a token /readyz says only that it is not ready; with one it names the problem.
  const bare = await request(app).get('/readyz');
  expect(bare.status, bare.text).toBe(503);
  expect(bare.body).toEqual({ error: { code: 'unavailable', message: NOT_READY_MESSAGE } });
  const ready = await request(app).get('/readyz').set(bearer(api.tenantA));
  expect(ready.status, ready.text).toBe(503);
  expect(ready.body.error.message).toMatch(problem);
  const before = (await api.stack.store.listSandboxes(api.tenantA.id, { limit: 200 })).sandboxes;
  const created = await request(app)
    .post('/v1/sandboxes')
    .set(bearer(api.tenantA))
    .send(createBody(2048));
  expect(created.status, created.text).toBe(503);
  expect(created.body.error.code).toBe('unavailable');
  expect(created.body.error.message).toMatch(problem);
  const after = (await api.stack.store.listSandboxes(api.tenantA.id, { limit: 200 })).sandboxes;
  expect(after).toHaveLength(before.length);
}

describe("the API's cluster check", () => {
  it('is ready asking only who it is (no permission), once per 5 s', async () => {
    const app = appOver(api.stack.kubernetes);
    const since = Date.now();
    const first = await request(app).get('/readyz').set(bearer(api.tenantA));
    expect(first.status, first.text).toBe(200);
    expect(first.body.checks).toEqual({
      temporal: 'ok',
      store: 'ok',
      search_attributes: 'ok',
      cluster: 'ok',
    });
    await request(app).get('/readyz');
    await request(app).post('/v1/sandboxes').set(bearer(api.tenantA)).send(createBody(2048));
    const checks = api.stack.cluster.requestsWhere({
      resource: ['selfsubjectreviews', 'selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
      since,
    });
    expect(checks.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /apis/authentication.k8s.io/v1/selfsubjectreviews',
    ]);
  });

  it("stays ready when the account may not touch pods: the API needs no permission (the worker's check names it)", async () => {
    api.stack.cluster.faults.deny('create', 'pods', true);
    const ready = await request(appOver(api.stack.kubernetes)).get('/readyz');
    expect(ready.status, ready.text).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
  });

  it('names refused credentials', async () => {
    api.stack.cluster.faults.rejectCredentials(true);
    await expectUnusable(
      appOver(api.stack.kubernetes),
      /the apiserver at http:\/\/127\.0\.0\.1:\d+ refused the kubeconfig's credentials \(401 Unauthorized\)/,
    );
  });

  it('names an apiserver that cannot be reached', async () => {
    const gone = await SimulatedCluster.start();
    const kubernetes = createKubernetesClient({
      kubeconfigYaml: gone.kubeconfigYaml(),
      namespace: 'sandboxes',
    });
    await gone.close();
    await expectUnusable(
      appOver(kubernetes),
      /the apiserver at http:\/\/127\.0\.0\.1:\d+ cannot be reached: .*ECONNREFUSED/,
    );
  });

  it('names a kubeconfig client-node refuses (http:// without insecure-skip-tls-verify)', async () => {
    await expectUnusable(
      appOver(plainHttpClient()),
      'the kubeconfig cannot work: HTTP protocol is not allowed when skipTLSVerify is not set or false',
    );
  });

  it("asks for no permission, and deploy/ binds the API's account to no Role", () => {
    expect(API_PERMISSIONS).toEqual([]);
    const bindings = ['rbac.yaml', 'service-account.yaml']
      .flatMap((file) => parseAllDocuments(readFileSync(`deploy/${file}`, 'utf8')))
      .map((doc) => doc.toJS() as { kind: string; subjects?: Array<{ name: string }> })
      .filter((doc) => doc.kind === 'RoleBinding' || doc.kind === 'ClusterRoleBinding');
    expect(bindings.length).toBeGreaterThan(0);
    const subjects = bindings.flatMap((binding) => binding.subjects ?? []).map((s) => s.name);
    expect(subjects).not.toContain('durable-sandbox-api');
  });
});

describe("the worker's cluster check", () => {
  it('asks one access review per verb of deploy/rbac.yaml, and is ok when all are granted', async () => {
    const since = Date.now();
    expect(await checkCluster(api.stack.kubernetes, WORKER_PERMISSIONS)).toEqual({ ok: true });
    const reviews = api.stack.cluster.requestsWhere({
      resource: 'selfsubjectaccessreviews',
      since,
    });
    const asks = WORKER_PERMISSIONS.reduce((sum, rule) => sum + rule.verbs.length, 0);
    expect(reviews).toHaveLength(asks);
  });

  it('names a permission deploy/rbac.yaml grants that the account lacks', async () => {
    api.stack.cluster.faults.deny('create', 'pods', true);
    expect(await checkCluster(api.stack.kubernetes, WORKER_PERMISSIONS)).toEqual({
      ok: false,
      problem:
        'the service account may not create pods in namespace "sandboxes" (apply deploy/rbac.yaml)',
    });
  });

  it('is usable with a warning when only the events permissions are missing', async () => {
    api.stack.cluster.faults.deny('watch', 'events', true);
    try {
      expect(await checkCluster(api.stack.kubernetes, WORKER_PERMISSIONS)).toEqual({
        ok: true,
        warning:
          'the service account may not watch events in namespace "sandboxes" (apply deploy/rbac.yaml); a node\'s refusal is not seen until the deadline',
      });
    } finally {
      api.stack.cluster.faults.deny('watch', 'events', false);
    }
  });

  it('is usable with a warning when the apiserver answers 404 to access reviews', async () => {
    api.stack.cluster.faults.withoutAccessReviews(true);
    try {
      const report = await checkCluster(api.stack.kubernetes, WORKER_PERMISSIONS);
      expect(report).toEqual({
        ok: true,
        warning: expect.stringMatching(
          /^the apiserver at http:\/\/127\.0\.0\.1:\d+ cannot answer access reviews \(404: .*the server could not find the requested resource\), so the permissions of deploy\/rbac\.yaml are not checked/,
        ),
      });
    } finally {
      api.stack.cluster.faults.withoutAccessReviews(false);
    }
  });

  it('checks exactly the rules deploy/rbac.yaml grants', () => {
    const role = parseAllDocuments(readFileSync('deploy/rbac.yaml', 'utf8'))
      .map((doc) => doc.toJS() as { kind: string; rules?: unknown[] })
      .find((doc) => doc.kind === 'Role');
    const rules = (role?.rules ?? []) as Array<{ resources: string[]; verbs: string[] }>;
    expect(
      rules.flatMap((rule) => rule.resources.map((resource) => ({ resource, verbs: rule.verbs }))),
    ).toEqual(WORKER_PERMISSIONS);
  });
});

/** The stack's kubeconfig without `insecure-skip-tls-verify`: client-node refuses http://. */
function plainHttpClient(): KubernetesClient {
  return createKubernetesClient({
    kubeconfigYaml: api.stack.cluster
      .kubeconfigYaml()
      .replace(/\n\s*insecure-skip-tls-verify: true/, ''),
    namespace: 'sandboxes',
  });
}

describe('a create whose kubeconfig cannot work', () => {
  it('ends at once as unavailable naming the cause, with nothing left to compensate', async () => {
    const taskQueue = uniqueTaskQueue('bad-kubeconfig');
    await withSandboxWorker(
      {
        temporal: api.stack.temporal,
        store: api.stack.store,
        kubernetes: plainHttpClient(),
        taskQueue,
      },
      async () => {
        const started = Date.now();
        const { handle, input } = await startCreate(
          { ...api.stack, taskQueue },
          { diskMib: 2048, deadlineMs: 60_000 },
        );
        const outcome = await settle(handle.result());
        expect(Date.now() - started).toBeLessThan(20_000);
        expect(operationErrorOf(outcome.error)).toMatchObject({
          code: 'unavailable',
          message:
            'the kubeconfig cannot work: HTTP protocol is not allowed when skipTLSVerify is not set or false',
        });
        expect(await api.stack.store.getSandboxById(input.sandboxId)).toMatchObject({
          state: 'failed',
          failure: { code: 'unavailable' },
        });
      },
    );
  });
});
