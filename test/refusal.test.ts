import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decisiveRefusal,
  isSandboxFailureOf,
  parseRefusal,
  parseRootfsFloor,
  REFUSAL_RULES,
  type EventLike,
} from '../src/verdict/refusal.js';

const KUBELET_MESSAGE =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';

function kubeletEvent(overrides: Partial<EventLike> = {}): EventLike {
  return {
    type: 'Warning',
    reason: 'FailedCreatePodSandBox',
    message: KUBELET_MESSAGE,
    source: { component: 'kubelet', host: 'node-1' },
    involvedObject: { kind: 'Pod', name: 'sbx-1-g1', uid: 'uid-1' },
    ...overrides,
  };
}

describe('parseRefusal', () => {
  it('reads the code and the reason after the marker', () => {
    expect(parseRefusal(KUBELET_MESSAGE)).toEqual({
      code: 'InvalidArgument',
      reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
      decisive: true,
    });
  });

  it('decides by the marker, not by the gRPC code text of the message', () => {
    expect(
      parseRefusal('rpc error: code = InvalidArgument desc = [space-err=Unavailable] busy'),
    ).toMatchObject({ code: 'Unavailable', decisive: false });
    expect(parseRefusal('rpc error: code = InvalidArgument desc = disk too small')).toBeUndefined();
  });

  it('uses the last marker when there are several', () => {
    const message = '[space-err=Unavailable] retrying: [space-err=InvalidArgument] disk too small';
    expect(parseRefusal(message)).toEqual({
      code: 'InvalidArgument',
      reason: 'disk too small',
      decisive: true,
    });
  });

  it('handles the "(combined from similar events): " prefix of aggregated events', () => {
    const refusal = parseRefusal(`${REFUSAL_RULES.combinedPrefix}${KUBELET_MESSAGE}`);
    expect(refusal?.decisive).toBe(true);
    expect(refusal?.reason).toContain('451 MiB');
  });

  it('strips control characters and trims the reason', () => {
    const refusal = parseRefusal(
      '[space-err=InvalidArgument] \u001b[31mdisk\ttoo\nsmall\u0000 \r\n',
    );
    expect(refusal?.reason).toBe('[31mdisk too small');
  });

  it('caps the reason length', () => {
    const refusal = parseRefusal(`[space-err=InvalidArgument] ${'x'.repeat(5000)}`);
    expect(refusal?.reason).toHaveLength(REFUSAL_RULES.maxReasonLength);
  });

  it('treats every other code as not decisive', () => {
    for (const code of [
      'Unavailable',
      'ResourceExhausted',
      'Unknown',
      'Internal',
      'invalidargument',
    ]) {
      expect(parseRefusal(`[space-err=${code}] x`)?.decisive).toBe(false);
    }
  });

  it('answers undefined for messages without a marker', () => {
    for (const message of [undefined, null, '', 'Failed to create pod sandbox', '[space-err=] x']) {
      expect(parseRefusal(message)).toBeUndefined();
    }
  });

  it('never throws, never keeps control characters, never exceeds the cap (property)', () => {
    const marker = fc.constantFrom('[space-err=InvalidArgument]', '[space-err=Unavailable]', '');
    const text = fc.string({ unit: 'binary', maxLength: 2000 });
    fc.assert(
      fc.property(text, marker, text, marker, text, (a, m1, b, m2, c) => {
        const refusal = parseRefusal(`${a}${m1}${b}${m2}${c}`);
        if (refusal === undefined) return;
        expect(refusal.reason.length).toBeLessThanOrEqual(REFUSAL_RULES.maxReasonLength);
        // eslint-disable-next-line no-control-regex
        expect(refusal.reason).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
        expect(refusal.reason).toBe(refusal.reason.trim());
        expect(refusal.decisive).toBe(refusal.code === 'InvalidArgument');
      }),
      { numRuns: 2000 },
    );
  });
});

/** A pod of uid `uid` bound to `nodeName` (node-1 is the node of {@link kubeletEvent}). */
const podOf = (uid: string, nodeName: string | undefined = 'node-1') => ({
  metadata: { uid },
  spec: { nodeName },
});

/**
 * The same refusal written through events.k8s.io/v1 and served as core/v1 (pkg/apis/events/v1
 * conversion.go): no `source` (the apiserver refuses a deprecatedSource on create),
 * reportingController and reportingInstance as written.
 */
function eventsV1Refusal(controller: string, instance: string): EventLike {
  return kubeletEvent({ source: {}, reportingComponent: controller, reportingInstance: instance });
}

describe('decisiveRefusal: which events count', () => {
  it("counts a kubelet Warning FailedCreatePodSandBox event of this pod uid from the pod's node", () => {
    expect(decisiveRefusal(kubeletEvent(), podOf('uid-1'))?.reason).toContain('451 MiB');
  });

  it('counts the core/v1 shape of client-go tools/record: source and reporting pair agree', () => {
    const event = kubeletEvent({ reportingComponent: 'kubelet', reportingInstance: 'node-1' });
    expect(isSandboxFailureOf(event, podOf('uid-1'))).toBe(true);
  });

  it('counts the events.k8s.io/v1 shape: kubelet reporting controllers, instance naming the node', () => {
    for (const [controller, instance] of [
      ['kubernetes.io/kubelet', 'node-1'],
      ['kubernetes.io/kubelet', 'kubernetes.io/kubelet-node-1'],
      ['kubelet', 'node-1'],
    ] as const) {
      expect(isSandboxFailureOf(eventsV1Refusal(controller, instance), podOf('uid-1'))).toBe(true);
    }
  });

  it("ignores an event reported for another node than the pod's, in either shape", () => {
    expect(decisiveRefusal(kubeletEvent(), podOf('uid-1', 'node-2'))).toBeUndefined();
    const forged = eventsV1Refusal('kubernetes.io/kubelet', 'node-2');
    expect(isSandboxFailureOf(forged, podOf('uid-1'))).toBe(false);
    // One shape right, the other naming another node: refused.
    const mixed = kubeletEvent({ reportingComponent: 'kubelet', reportingInstance: 'node-2' });
    expect(isSandboxFailureOf(mixed, podOf('uid-1'))).toBe(false);
  });

  it('ignores every event of a pod not bound to a node, or without a uid', () => {
    expect(
      decisiveRefusal(kubeletEvent(), { metadata: { uid: 'uid-1' }, spec: {} }),
    ).toBeUndefined();
    expect(decisiveRefusal(kubeletEvent(), { spec: { nodeName: 'node-1' } })).toBeUndefined();
    expect(decisiveRefusal(kubeletEvent(), undefined)).toBeUndefined();
  });

  it('ignores another uid, another type, another reason or another reporter', () => {
    expect(decisiveRefusal(kubeletEvent(), podOf('uid-2'))).toBeUndefined();
    expect(decisiveRefusal(kubeletEvent({ type: 'Normal' }), podOf('uid-1'))).toBeUndefined();
    expect(
      decisiveRefusal(kubeletEvent({ reason: 'FailedMount' }), podOf('uid-1')),
    ).toBeUndefined();
    expect(
      decisiveRefusal(
        kubeletEvent({ source: { component: 'my-controller', host: 'node-1' } }),
        podOf('uid-1'),
      ),
    ).toBeUndefined();
    expect(isSandboxFailureOf(eventsV1Refusal('my-controller', 'node-1'), podOf('uid-1'))).toBe(
      false,
    );
    // No reporter at all.
    expect(isSandboxFailureOf(kubeletEvent({ source: {} }), podOf('uid-1'))).toBe(false);
  });

  it('ignores a non-decisive code from kubelet', () => {
    const message = KUBELET_MESSAGE.replace('InvalidArgument', 'Unavailable');
    expect(isSandboxFailureOf(kubeletEvent({ message }), podOf('uid-1'))).toBe(true);
    expect(decisiveRefusal(kubeletEvent({ message }), podOf('uid-1'))).toBeUndefined();
  });
});

describe('parseRootfsFloor: the floor a refusal teaches', () => {
  it("reads the cloned rootfs size of the node's reason", () => {
    expect(parseRootfsFloor(parseRefusal(KUBELET_MESSAGE)?.reason)).toBe(451);
  });

  it('finds no floor in a reason that states no cloned rootfs size', () => {
    expect(parseRootfsFloor('template base is not present on node node-1')).toBeUndefined();
    expect(parseRootfsFloor('rootfs_size_mb=abc is not a valid size')).toBeUndefined();
    expect(parseRootfsFloor('cloned rootfs size 0 MiB')).toBeUndefined();
    expect(parseRootfsFloor(undefined)).toBeUndefined();
  });

  it('reads back any size it is given, wherever the sentence sits, and never throws', () => {
    const text = fc.string({ unit: 'binary', maxLength: 300 });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999_999_999 }), fc.nat(), text, (size, disk, tail) => {
        const reason = `${tail} rootfs_size_mb=${disk} is smaller than cloned rootfs size ${size} MiB${tail}`;
        expect(parseRootfsFloor(reason)).toBe(size);
      }),
    );
    fc.assert(
      fc.property(text, (reason) => {
        const floor = parseRootfsFloor(reason);
        expect(floor === undefined || (Number.isSafeInteger(floor) && floor > 0)).toBe(true);
        if (!reason.includes('cloned rootfs size')) expect(floor).toBeUndefined();
      }),
    );
  });
});
