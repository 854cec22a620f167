/**
 * The rules of the outcome at the decision (src/verdict/outcome-at-decision.ts), as a table:
 * which wait outcomes write the operation's outcome, what they write (the error the workflow
 * would write: contract/create-workflow.ts `operationErrorOf`), the pod-uid fence passed down,
 * and that the failure says `outcomeRecorded` only when the write applied. The store is a
 * recorder of the calls (the full tier, test/outcome-at-decision.test.ts, runs the real one).
 * Fast tier.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  failureAtDecision,
  floorLearning,
  isOutcomeRecorded,
} from '../src/verdict/outcome-at-decision.js';
import {
  operationErrorOf,
  type CreateFailureDetails,
  type LearnedRootfsFloor,
} from '../contract/index.js';
import type { ReadinessOutcome } from '../src/verdict/readiness-watch.js';
import type { OperationOutcomeInput, SandboxRecord } from '../src/store/index.js';

const POD = { name: 'sbx-rules-g1', uid: 'uid-rules' };
const WAIT = { operationId: 'op_rules', pod: POD };

/** A store that records each outcome write and answers `answer` (or throws it). */
function recordingStore(answer: boolean | Error) {
  const writes: OperationOutcomeInput[] = [];
  return {
    writes,
    async recordOperationOutcome(input: OperationOutcomeInput): Promise<boolean> {
      writes.push(input);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

const refused: ReadinessOutcome = {
  outcome: 'refused',
  code: 'InvalidArgument',
  reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
  eventName: 'sbx-rules-g1.181',
  eventLastTimestamp: '2026-12-04T12:00:00Z',
  nodeName: 'node-a',
};

function detailsOf(failure: ApplicationFailure): CreateFailureDetails {
  return failure.details?.[0] as CreateFailureDetails;
}

describe('the outcome at the decision', () => {
  it.each([
    { outcome: refused, code: 'invalid_request', type: 'InvalidRequest' },
    {
      outcome: { outcome: 'podFailed', reason: 'the pod was deleted' } as ReadinessOutcome,
      code: 'pod_failed',
      type: 'PodFailed',
    },
    {
      outcome: { outcome: 'watchRefused', reason: 'may not watch pods' } as ReadinessOutcome,
      code: 'unavailable',
      type: 'Unavailable',
    },
  ])(
    'an outcome that ends the create ($code) is written, fenced by the pod, then said',
    async ({ outcome, code, type }) => {
      const store = recordingStore(true);
      const decided = await failureAtDecision(
        store,
        WAIT,
        outcome as Exclude<ReadinessOutcome, { outcome: 'ready' }>,
      );
      expect(isOutcomeRecorded(decided.failure)).toBe(true);
      expect(decided.failure.type).toBe(type);
      expect(decided.failure.nonRetryable).toBe(true);
      expect(detailsOf(decided.failure)).toMatchObject({ code, outcomeRecorded: true });
      expect(store.writes).toHaveLength(1);
      const [write] = store.writes;
      expect(write).toMatchObject({
        operationId: WAIT.operationId,
        status: 'failed',
        podUid: POD.uid,
        error: { code, message: decided.failure.message },
      });
      expect(write?.error.details).not.toHaveProperty('code');
      expect(write?.error.details).not.toHaveProperty('outcomeRecorded');
      expect(write?.error.details).toMatchObject({ podName: POD.name, podUid: POD.uid });
    },
  );

  it('a refusal writes the rootfs size and the event the workflow would write', async () => {
    const store = recordingStore(true);
    const decided = await failureAtDecision(store, WAIT, refused);
    const { outcomeRecorded: _flag, ...details } = detailsOf(decided.failure);
    expect(store.writes[0]?.error).toEqual(operationErrorOf(decided.failure.message, details));
    expect(store.writes[0]?.error.details).toMatchObject({
      rootfsMib: 451,
      eventName: refused.eventName,
      nodeName: 'node-a',
    });
  });

  it.each([
    {
      what: 'a re-placement refusal',
      outcome: {
        outcome: 'nodeRefused',
        code: 'NoSpace',
        reason: 'disk full',
        eventName: 'e',
        nodeName: 'node-a',
      } as ReadinessOutcome,
    },
    {
      what: 'no node left',
      outcome: { outcome: 'unschedulable', reason: '0/3 nodes' } as ReadinessOutcome,
    },
  ])('$what goes on to the next placement: nothing written, nothing said', async ({ outcome }) => {
    const store = recordingStore(true);
    const decided = await failureAtDecision(
      store,
      WAIT,
      outcome as Exclude<ReadinessOutcome, { outcome: 'ready' }>,
    );
    expect(store.writes).toEqual([]);
    expect(isOutcomeRecorded(decided.failure)).toBe(false);
    expect(decided.failure.details?.[0]).not.toHaveProperty('outcomeRecorded');
  });

  it.each([
    { what: 'the write did not apply (fence, or another outcome first)', answer: false },
    { what: 'the store failed', answer: new Error('database is locked') },
  ])(
    '$what: the failure does not say it, so the workflow writes the outcome',
    async ({ answer }) => {
      const decided = await failureAtDecision(recordingStore(answer), WAIT, refused);
      expect(isOutcomeRecorded(decided.failure)).toBe(false);
      expect(detailsOf(decided.failure).outcomeRecorded).toBeUndefined();
      expect(decided.failure.type).toBe('InvalidRequest');
      expect(decided.error?.message).toBe(answer instanceof Error ? answer.message : undefined);
    },
  );

  it('a store that does not answer in time does not hold the failure back', async () => {
    const hanging = { recordOperationOutcome: () => new Promise<boolean>(() => undefined) };
    const decided = await failureAtDecision(hanging, WAIT, refused, 50);
    expect(isOutcomeRecorded(decided.failure)).toBe(false);
    expect(decided.error?.message).toMatch(/did not answer within 50 ms/);
    expect(detailsOf(decided.failure).outcomeRecorded).toBeUndefined();
  });

  it('operationErrorOf leaves out code, the flag and undefined values', () => {
    expect(
      operationErrorOf('m', {
        code: 'pod_failed',
        reason: 'r',
        podName: undefined,
        outcomeRecorded: true,
      }),
    ).toEqual({ code: 'pod_failed', message: 'm', details: { reason: 'r' } });
  });
});

describe('the rootfs floor at the decision', () => {
  /** A store that logs each call in order; its sandbox row is the create's unless said. */
  function floorStore(options: { operationId?: string; floorError?: Error } = {}) {
    const calls: string[] = [];
    const floors: LearnedRootfsFloor[] = [];
    return {
      calls,
      floors,
      async recordOperationOutcome(): Promise<boolean> {
        calls.push('outcome');
        return true;
      },
      async getSandboxById(id: string) {
        calls.push('sandbox');
        return {
          id,
          tenant: 'tenant-a',
          template: 'base',
          operationId: options.operationId ?? WAIT.operationId,
        } as SandboxRecord;
      },
      async recordRootfsFloor(floor: LearnedRootfsFloor): Promise<boolean> {
        calls.push('floor');
        if (options.floorError) throw options.floorError;
        floors.push(floor);
        return true;
      },
    };
  }
  const catalog = { base: { image: 'example.test/base:1' } };
  const withSandbox = { ...WAIT, sandboxId: 'sbx_rules' };

  /** The decision of `outcome` for `wait` with floor learning over `store` and `templates`. */
  function decide(
    store: ReturnType<typeof floorStore>,
    outcome: ReadinessOutcome = refused,
    wait: { operationId: string; pod: typeof POD; sandboxId?: string } = withSandbox,
    templates: Record<string, { image: string }> = catalog,
  ) {
    return failureAtDecision(
      store,
      wait,
      outcome as Exclude<ReadinessOutcome, { outcome: 'ready' }>,
      undefined,
      floorLearning({ store, templates }),
    );
  }

  it("a decisive refusal stores the floor, for the sandbox's tenant and template and the catalog's image, before the outcome", async () => {
    const store = floorStore();
    const withTime = { ...refused, eventLastTimestamp: '2026-12-04T12:00:00Z' } as const;
    const decided = await decide(store, withTime);
    expect(store.calls).toEqual(['sandbox', 'floor', 'outcome']);
    expect(store.floors).toEqual([
      {
        image: 'example.test/base:1',
        template: 'base',
        rootfsMib: 451,
        tenantId: 'tenant-a',
        nodeName: 'node-a',
        reason: 'cloned rootfs size 451 MiB',
        operationId: WAIT.operationId,
        learnedAtMs: Date.parse('2026-12-04T12:00:00Z'),
      },
    ]);
    expect(decided.floor).toEqual(store.floors[0]);
    expect(isOutcomeRecorded(decided.failure)).toBe(true);
  });

  it.each([
    { what: "another operation's sandbox", store: () => floorStore({ operationId: 'op_other' }) },
    { what: 'no sandbox id from the activity', store: () => floorStore(), wait: WAIT },
    { what: 'a template the catalog lacks', store: () => floorStore(), templates: {} },
    {
      what: 'a pod failure',
      store: () => floorStore(),
      outcome: { outcome: 'podFailed', reason: 'the pod was deleted' } as ReadinessOutcome,
    },
    {
      what: 'a refusal that names no event',
      store: () => floorStore(),
      outcome: { ...refused, eventName: '' } as ReadinessOutcome,
    },
  ])('$what: no floor, the outcome as before', async (row) => {
    const store = row.store();
    const decided = await decide(store, row.outcome, row.wait, row.templates);
    expect(store.floors).toEqual([]);
    expect(decided.floor).toBeUndefined();
    expect(store.calls).toContain('outcome');
  });

  it('a floor the store cannot write does not hold the outcome back', async () => {
    const store = floorStore({ floorError: new Error('database is locked') });
    const decided = await decide(store);
    expect(decided.floorError?.message).toBe('database is locked');
    expect(store.calls).toEqual(['sandbox', 'floor', 'outcome']);
    expect(isOutcomeRecorded(decided.failure)).toBe(true);
  });
});
