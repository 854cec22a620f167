/**
 * A warm pool's reconcile decisions (src/activities/warm-pool-plan.ts) as tables: which pods go and
 * why, how many are made, when the pool backs off and when it is blocked by its image's floor.
 * Fast tier: pure functions.
 */
import { describe, expect, it } from 'vitest';
import {
  planReconcile,
  type PlanHistory,
  type PlannedPod,
  type PlanTarget,
} from '../src/activities/warm-pool-plan.js';
import { warmPoolBackoffMs, WARM_POOL_BACKOFF } from '../contract/index.js';
import { loadConfig, warmPoolOf } from '../src/config/index.js';
import { warmPodFingerprint } from '../src/kubernetes/warm-pods.js';

const NOW = Date.parse('2026-12-04T12:00:00Z');
const TARGET: PlanTarget = {
  resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
  desired: 3,
  replaceOn: ['ResourceExhausted'],
};
const CLEAN: PlanHistory = { failures: 0, backOffUntilMs: 0 };

let counter = 0;
function pod(overrides: Partial<PlannedPod> = {}): PlannedPod {
  counter += 1;
  return {
    uid: `uid-${counter}`,
    name: `warm-t-${counter}`,
    madeAsPool: true,
    ready: true,
    phase: 'Running',
    terminating: false,
    createdAtMs: NOW - 10_000,
    ...overrides,
  };
}

const refusal = (code: string, decisive: boolean, rootfsMib?: number) => ({
  code,
  decisive,
  reason: `rootfs_size_mb=2048 is smaller than cloned rootfs size ${rootfsMib ?? 0} MiB`,
  rootfsMib,
  nodeName: 'node-a',
});

describe('a reconcile plan', () => {
  const rows: Array<{
    name: string;
    pods: PlannedPod[];
    target?: Partial<PlanTarget>;
    history?: PlanHistory;
    deletes: string[];
    make: number;
    blocked?: RegExp;
    backingOff?: boolean;
  }> = [
    { name: 'an empty pool makes its size', pods: [], deletes: [], make: 3 },
    { name: 'a full pool makes nothing', pods: [pod(), pod(), pod()], deletes: [], make: 0 },
    {
      name: 'pending pods count toward the size',
      pods: [pod(), pod({ ready: false, phase: 'Pending' })],
      deletes: [],
      make: 1,
    },
    {
      name: 'a pod not made as the pool makes them (image, resources, settings) is stale and replaced',
      pods: [pod({ madeAsPool: false }), pod(), pod()],
      deletes: ['stale'],
      make: 1,
    },
    {
      name: 'a shrink deletes pending pods before ready ones',
      pods: [pod(), pod(), pod({ ready: false, phase: 'Pending' }), pod()],
      target: { desired: 2 },
      deletes: ['surplus', 'surplus'],
      make: 0,
    },
    {
      name: 'a failed pod is deleted and the pool backs off',
      pods: [pod({ phase: 'Failed', ready: false }), pod(), pod()],
      deletes: ['failed'],
      make: 0,
      backingOff: true,
    },
    {
      name: 'a decisive refusal deletes the pod and blocks the pool when its floor exceeds the disk',
      pods: [
        pod({ ready: false, phase: 'Pending', refusal: refusal('InvalidArgument', true, 4096) }),
      ],
      deletes: ['refused'],
      make: 0,
      blocked: /rootfs floor \(4096 MiB\) is above the pool's disk_mib \(2048 MiB\)/,
      backingOff: true,
    },
    {
      name: 'a known floor above the disk blocks an empty pool',
      pods: [],
      target: { floorMib: 3000 },
      deletes: [],
      make: 0,
      blocked: /rootfs floor \(3000 MiB\)/,
    },
    {
      name: 'a re-placement code deletes the pod',
      pods: [pod({ ready: false, phase: 'Pending', refusal: refusal('ResourceExhausted', false) })],
      deletes: ['refused'],
      make: 0,
      backingOff: true,
    },
    {
      name: 'a ready pod is not deleted for an old refusal',
      pods: [pod({ refusal: refusal('ResourceExhausted', false) }), pod(), pod()],
      deletes: [],
      make: 0,
    },
    {
      name: 'another code waits (kubelet retries the node)',
      pods: [pod({ ready: false, phase: 'Pending', refusal: refusal('Unavailable', false) })],
      deletes: [],
      make: 2,
    },
    {
      name: 'a pod with no IP for 5 minutes is stuck',
      pods: [pod({ ready: false, phase: 'Pending', createdAtMs: NOW - 301_000 }), pod(), pod()],
      deletes: ['stuck'],
      make: 0,
      backingOff: true,
    },
    {
      name: 'a pool backing off makes nothing',
      pods: [pod()],
      history: { failures: 2, backOffUntilMs: NOW + 5_000, reason: 'x' },
      deletes: [],
      make: 0,
      backingOff: true,
    },
    {
      name: 'at most 10 pods are made at once',
      pods: [],
      target: { desired: 50 },
      deletes: [],
      make: 10,
    },
    {
      name: 'terminating pods are ignored',
      pods: [pod({ terminating: true })],
      deletes: [],
      make: 3,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plan = planReconcile(row.pods, { ...TARGET, ...row.target }, row.history ?? CLEAN, NOW);
      expect(plan.deletes.map((d) => d.reason)).toEqual(row.deletes);
      expect(plan.make).toBe(row.make);
      if (row.blocked) expect(plan.blocked).toMatch(row.blocked);
      else expect(plan.blocked).toBeUndefined();
      expect(NOW < plan.history.backOffUntilMs).toBe(row.backingOff ?? false);
    });
  }

  it('doubles the back-off with each failing reconcile, up to its cap, and resets on a clean ready pod', () => {
    let history = CLEAN;
    const delays: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      const plan = planReconcile([pod({ phase: 'Failed', ready: false })], TARGET, history, NOW);
      history = plan.history;
      delays.push(history.backOffUntilMs - NOW);
    }
    expect(delays.slice(0, 4)).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(delays.at(-1)).toBe(WARM_POOL_BACKOFF.maxMs);
    const later = NOW + 600_000;
    const clean = planReconcile([pod()], TARGET, history, later);
    expect(clean.history).toEqual(CLEAN);
    expect(warmPoolBackoffMs(1)).toBe(WARM_POOL_BACKOFF.initialMs);
  });

  it('learns the floor a decisive refusal states', () => {
    const plan = planReconcile(
      [pod({ ready: false, phase: 'Pending', refusal: refusal('InvalidArgument', true, 451) })],
      TARGET,
      CLEAN,
      NOW,
    );
    expect(plan.floors).toEqual([expect.objectContaining({ rootfsMib: 451, nodeName: 'node-a' })]);
  });
});

/** The templates of SANDBOX_TEMPLATES `{t: template}`. */
const templatesOf = (template: Record<string, unknown>) =>
  loadConfig({ SANDBOX_TEMPLATES: JSON.stringify({ t: { image: 'img:1', ...template } }) })
    .templates;

describe("a template's warm_pool", () => {
  it('is read with cpu as a Kubernetes quantity', () => {
    const templates = templatesOf({
      warm_pool: { size: 2, resources: { cpu: '500m', memory_mib: 256, disk_mib: 1024 } },
    });
    expect(warmPoolOf(templates.t!)).toEqual({
      size: 2,
      maxPending: 10,
      resources: { cpu: 0.5, memoryMib: 256, diskMib: 1024 },
    });
  });

  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'a size above 500',
      { warm_pool: { size: 501, resources: { cpu: 1, memory_mib: 256, disk_mib: 1024 } } },
      /t\.warm_pool\.size: must be an integer from 0 to 500/,
    ],
    [
      'a cpu that is no quantity',
      { warm_pool: { size: 1, resources: { cpu: '1Gi', memory_mib: 256, disk_mib: 1024 } } },
      /t\.warm_pool\.resources\.cpu/,
    ],
    [
      'a disk above the template max_disk_mib',
      {
        max_disk_mib: 512,
        warm_pool: { size: 1, resources: { cpu: 1, memory_mib: 256, disk_mib: 1024 } },
      },
      /t\.warm_pool\.resources\.disk_mib: is above max_disk_mib/,
    ],
    ['an unknown field', { warm_pool: { size: 1, resources: {}, extra: 1 } }, /t\.warm_pool/],
  ];
  for (const [name, template, message] of refused) {
    it(`refuses ${name} at start, naming the field`, () => {
      expect(() => templatesOf(template)).toThrow(message);
    });
  }
});

describe("a pool pod's fingerprint", () => {
  const input = {
    template: 't',
    image: 'img:1',
    resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
    settings: { runAsNonRoot: true, runtimeClassName: 'gvisor' },
  };
  it('is the same for the same inputs, whatever the key order', () => {
    expect(warmPodFingerprint({ ...input })).toBe(
      warmPodFingerprint({
        settings: { runtimeClassName: 'gvisor', runAsNonRoot: true },
        resources: { diskMib: 2048, memoryMib: 1024, cpu: 1 },
        image: 'img:1',
        template: 't',
      }),
    );
  });
  const changes: Array<[string, Partial<typeof input>]> = [
    ['another image', { image: 'img:2' }],
    ['more memory', { resources: { cpu: 1, memoryMib: 2048, diskMib: 2048 } }],
    ['no RuntimeClass', { settings: { runAsNonRoot: true } as typeof input.settings }],
  ];
  for (const [name, change] of changes) {
    it(`changes with ${name}, so the pool's earlier pods go stale`, () => {
      expect(warmPodFingerprint({ ...input, ...change })).not.toBe(warmPodFingerprint(input));
    });
  }
});
