/**
 * The fault matrix on the production topology (environments/topology; docs/production.md,
 * "Fault matrix"), shared by `npm run chaos -- --topology` and test/topology-chaos.test.ts.
 * Every scenario drives the service over HTTP through the load balancer, as a client would,
 * then audits what the cluster and the store hold (tallied and printed by
 * environments/fault-report.ts, as `npm run chaos` is):
 *
 * - runs / correct outcomes: the creates started and how many ended as the scenario expects;
 * - stuck: not done within the bound, or done with the sandbox still `creating`;
 * - pods leaked: a pod of one of the scenario's sandboxes whose sandbox is not `running`;
 * - executions not retired: a sandbox `failed`, `deleted` or `lost` with an `active` execution;
 * - unexpected 5xx: any 5xx except 503 `unavailable` with `Retry-After` (what a client can act
 *   on) while the scenario's fault lasts.
 */
import { randomUUID } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import pg from 'pg';
import { DEV_TOKEN } from '../../src/config/index.js';
import { POD_LABELS } from '../../src/kubernetes/pod-spec.js';
import {
  auditScenario,
  faultRow,
  type FaultRow,
  type ScenarioAudit,
  type ScenarioResult,
} from '../fault-report.js';
import type { Topology } from './index.js';

/** The scenarios, by name; `count` is the runs of the repeated ones. */
export type FaultScenario =
  | 'worker-kill'
  | 'api-kill'
  | 'postgres-restart'
  | 'postgres-outage'
  | 'temporal-restart'
  | 'apiserver-restart'
  | 'worker-cut-from-apiserver';

export const ALL_SCENARIOS: FaultScenario[] = [
  'worker-kill',
  'api-kill',
  'postgres-restart',
  'postgres-outage',
  'temporal-restart',
  'apiserver-restart',
  'worker-cut-from-apiserver',
];

interface Operation {
  id: string;
  status: string;
  done: boolean;
  phase: string;
  sandbox_id: string;
  error: { code: string } | null;
}

/** How long a scenario's creates may take to be done, in ms (a loaded 2-core machine). */
const DONE_BOUND_MS = 300_000;
const BODY = JSON.stringify({
  template: 'base',
  resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
});

/** Runs the matrix's scenarios against `topology`; each leaves the topology as it found it. */
export class FaultMatrix {
  private unexpected5xx = 0;
  private expected503 = 0;
  private faultOn = false;
  private readonly core: CoreV1Api;

  constructor(
    private readonly topology: Topology,
    private readonly token = DEV_TOKEN,
  ) {
    const admin = topology.apiserver.kubeConfig('admin', 'sandboxes');
    this.core = admin.makeApiClient(CoreV1Api);
  }

  /** One create that must succeed: the workers are polling and the pod path works. */
  async warmUp(): Promise<void> {
    const op = await this.createAsync();
    const done = op && (await this.settle([op.id])).get(op.id);
    if (done?.status !== 'succeeded') {
      throw new Error(`the topology's first create did not succeed: ${JSON.stringify(done)}`);
    }
  }

  /**
   * Runs one scenario `count` times (the outage and restarts once per run, a few creates
   * waiting each time) and returns its row.
   */
  async run(scenario: FaultScenario, count: number): Promise<FaultRow> {
    const startedAtMs = Date.now();
    const before = { unexpected: this.unexpected5xx, expected: this.expected503 };
    const result = await this.body(scenario, count);
    await sleep(1_000); // the last compensations' deletes land
    const audit = await this.audit(result.sandboxIds);
    return faultRow(
      `${LABELS[scenario]} ×${count}`,
      result,
      audit,
      {
        unexpected5xx: this.unexpected5xx - before.unexpected,
        expected503: this.expected503 - before.expected,
      },
      startedAtMs,
    );
  }

  private async body(scenario: FaultScenario, count: number): Promise<ScenarioResult> {
    const t = this.topology;
    switch (scenario) {
      case 'worker-kill':
        return this.repeat(count, 1, async (i) => t.workers[i % 2]!.kill());
      case 'api-kill':
        return this.apiKill(count);
      case 'postgres-restart':
        return this.repeat(count, 2, async () => {
          await this.duringFault(async () => {
            await t.postgres!.stopServer();
            await t.postgres!.startServer();
          });
        });
      case 'postgres-outage':
        return this.repeat(count, 2, async () => {
          await this.duringFault(async () => {
            await t.postgres!.stopServer();
            // Meanwhile a client asks: each answer must be one it can act on.
            const until = Date.now() + 20_000;
            while (Date.now() < until) {
              await Promise.all([
                this.call('GET', '/v1/sandboxes?limit=1'),
                this.call('POST', '/v1/sandboxes', BODY),
              ]);
              await sleep(1_000);
            }
            await t.postgres!.startServer();
          });
        });
      case 'temporal-restart':
        return this.repeat(count, 2, async () => {
          await this.duringFault(async () => {
            await t.temporal.stopServer();
            await t.temporal.startServer();
          });
        });
      case 'apiserver-restart':
        return this.repeat(count, 2, async () => {
          await this.duringFault(() => t.apiserver.restartApiserver());
        });
      case 'worker-cut-from-apiserver':
        return this.repeat(count, 2, async () => {
          t.worker2ApiserverLink.cut();
          try {
            await sleep(10_000);
          } finally {
            t.worker2ApiserverLink.restore();
          }
        });
    }
  }

  /**
   * `count` times: start `perRun` creates, wait until the first waits for its pod's IP, apply
   * `fault`, and expect every create to succeed.
   */
  private async repeat(
    count: number,
    perRun: number,
    fault: (i: number) => Promise<void>,
  ): Promise<ScenarioResult> {
    const ops: Operation[] = [];
    for (let i = 0; i < count; i += 1) {
      const started: Operation[] = [];
      for (let j = 0; j < perRun; j += 1) {
        const op = await this.createAsync();
        if (op) started.push(op);
      }
      ops.push(...started);
      if (started[0]) await this.waitForPhase(started[0].id, 'waiting_for_ip');
      await fault(i);
      await this.settle(started.map((op) => op.id));
    }
    const done = await this.settle(ops.map((op) => op.id));
    for (const op of ops) {
      const final = done.get(op.id);
      if (final?.status !== 'succeeded') {
        process.stderr.write(
          `incorrect: ${op.id} ${JSON.stringify(final?.error ?? final?.status)}\n`,
        );
      }
    }
    return {
      runs: count * perRun,
      correct: ops.filter((op) => done.get(op.id)?.status === 'succeeded').length,
      notDone: ops.filter((op) => !done.get(op.id)?.done).length,
      sandboxIds: ops.map((op) => op.sandbox_id),
    };
  }

  /**
   * SIGKILL of the API replica holding a synchronous create: the create goes straight to
   * api-1, which is killed while it waits; the client sends it again with the same
   * Idempotency-Key through the load balancer and must get the one sandbox, 201.
   */
  private async apiKill(count: number): Promise<ScenarioResult> {
    let correct = 0;
    let notDone = 0;
    const sandboxIds: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const key = randomUUID();
      const api = this.topology.apis[i % 2]!;
      const first = this.callAt(api.url, 'POST', '/sync/v1/sandboxes', BODY, key).catch(
        () => undefined, // the connection dies with the replica
      );
      await sleep(700); // the pod is created; the node agent answers after its delay
      api.kill();
      const firstAnswer = await first;
      // The client's retry, as its HTTP library would after a reset connection.
      let answer = await this.call('POST', '/sync/v1/sandboxes', BODY, key);
      const deadline = Date.now() + DONE_BOUND_MS;
      while (answer.status >= 500 && Date.now() < deadline) {
        await sleep(1_000);
        answer = await this.call('POST', '/sync/v1/sandboxes', BODY, key);
      }
      const sandboxId = (answer.json as { id?: string }).id;
      if (sandboxId) sandboxIds.push(sandboxId);
      const firstId = (firstAnswer?.json as { id?: string } | undefined)?.id;
      if (answer.status === 201 && sandboxId && (!firstId || firstId === sandboxId)) correct += 1;
      else if (answer.status >= 500) notDone += 1;
      await this.waitForReplica(api);
    }
    // Exactly one sandbox per key: none beyond the ones answered.
    return { runs: count, correct, notDone, sandboxIds };
  }

  private async waitForReplica(api: Topology['apis'][number]): Promise<void> {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const ok = await fetch(`${api.url}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      await sleep(500);
    }
  }

  /** Runs `fault` with 503 `unavailable` counted as expected while it lasts. */
  private async duringFault(fault: () => Promise<void>): Promise<void> {
    this.faultOn = true;
    try {
      await fault();
    } finally {
      this.faultOn = false;
    }
  }

  private async createAsync(): Promise<Operation | undefined> {
    const { status, json } = await this.call('POST', '/v1/sandboxes', BODY);
    return status === 202 ? (json as unknown as Operation) : undefined;
  }

  private async waitForPhase(id: string, phase: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const op = (await this.call('GET', `/v1/operations/${id}`)).json as unknown as Operation;
      if (op.phase === phase || op.done) return;
      await sleep(50);
    }
  }

  /** Polls until every operation is done or the bound passes; the last answers. */
  private async settle(ids: string[]): Promise<Map<string, Operation>> {
    const last = new Map<string, Operation>();
    const deadline = Date.now() + DONE_BOUND_MS;
    let pending = [...ids];
    while (pending.length > 0 && Date.now() < deadline) {
      for (const id of pending) {
        const { status, json } = await this.call('GET', `/v1/operations/${id}`);
        if (status === 200) last.set(id, json as unknown as Operation);
      }
      pending = pending.filter((id) => !last.get(id)?.done);
      if (pending.length > 0) await sleep(500);
    }
    return last;
  }

  private call(method: string, path: string, body?: string, idempotencyKey?: string) {
    return this.callAt(this.topology.url, method, path, body, idempotencyKey).catch(
      (err: Error) => ({ status: 0, json: { error: { code: err.message } } }),
    );
  }

  /** One request; a 5xx is counted unless it is a 503 `unavailable` with Retry-After during a fault. */
  private async callAt(
    base: string,
    method: string,
    path: string,
    body?: string,
    idempotencyKey?: string,
  ): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${this.token}`,
        'Content-Type': 'application/json',
        ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
      },
      body,
    });
    const text = await response.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // counted by status only
    }
    if (response.status >= 500) {
      const code = (json.error as { code?: string } | undefined)?.code;
      const actionable =
        response.status === 503 && code === 'unavailable' && response.headers.has('retry-after');
      if (this.faultOn && actionable) this.expected503 += 1;
      else {
        this.unexpected5xx += 1;
        process.stderr.write(`unexpected ${response.status} on ${method} ${path}: ${text}\n`);
      }
    }
    return { status: response.status, json };
  }

  /** The audit of `sandboxIds` (environments/fault-report.ts) from the cluster and the store. */
  private async audit(sandboxIds: string[]): Promise<ScenarioAudit> {
    const pods = await this.core.listNamespacedPod({ namespace: 'sandboxes' });
    const db = new pg.Client({ connectionString: this.topology.storeUrl });
    await db.connect();
    try {
      const states = new Map<string, string>();
      const active = new Set<string>();
      if (sandboxIds.length > 0) {
        const byId = await db.query<{ id: string; state: string }>(
          'select id, state from sandboxes where id = any($1)',
          [sandboxIds],
        );
        for (const row of byId.rows) states.set(row.id, row.state);
        const executions = await db.query<{ sandbox_id: string }>(
          "select distinct sandbox_id from executions where sandbox_id = any($1) and state = 'active'",
          [sandboxIds],
        );
        for (const row of executions.rows) active.add(row.sandbox_id);
      }
      return auditScenario(sandboxIds, {
        podSandboxIds: pods.items.map((pod) => pod.metadata?.labels?.[POD_LABELS.sandboxId]),
        states,
        activeExecutions: active,
      });
    } finally {
      await db.end();
    }
  }
}

const LABELS: Record<FaultScenario, string> = {
  'worker-kill': 'worker SIGKILL mid-wait',
  'api-kill': 'API replica SIGKILL mid-sync create',
  'postgres-restart': 'PostgreSQL restart mid-wait',
  'postgres-outage': 'PostgreSQL outage (20 s) mid-wait',
  'temporal-restart': 'Temporal server restart mid-wait',
  'apiserver-restart': 'kube-apiserver restart mid-wait (same etcd)',
  'worker-cut-from-apiserver': 'worker cut from kube-apiserver (10 s), Temporal reachable',
};

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
