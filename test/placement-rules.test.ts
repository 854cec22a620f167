/**
 * The pure rules of re-placement (docs/architecture.md, "Re-placement"): how a refusal's code
 * is classified against a template's `replace_on`, and the pod of each placement (name,
 * annotation, required node affinity).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  placementOf,
  placementOfPodName,
  sandboxPod,
  podNameFor,
} from '../src/kubernetes/pod-spec.js';
import { classifyRefusal, nodeRefusal, type EventLike } from '../src/verdict/refusal.js';
import { nodeAffinityAllows, nodeLabels } from '../environments/simulated-cluster/scheduling.js';

const MARKED = (code: string) =>
  `Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=${code}] no sandbox capacity left`;

/** A pod of uid `uid` bound to node-a, the node of {@link kubeletEvent}. */
const podOf = (uid: string) => ({ metadata: { uid }, spec: { nodeName: 'node-a' } });

function kubeletEvent(code: string, uid = 'uid-1'): EventLike {
  return {
    type: 'Warning',
    reason: 'FailedCreatePodSandBox',
    message: MARKED(code),
    source: { component: 'kubelet', host: 'node-a' },
    involvedObject: { kind: 'Pod', name: 'sbx-1-g1', uid },
  };
}

describe('classifyRefusal', () => {
  it('ends the create on InvalidArgument, whatever replace_on says', () => {
    expect(classifyRefusal('InvalidArgument', [])).toBe('request');
    expect(classifyRefusal('InvalidArgument', ['InvalidArgument'])).toBe('request');
  });

  it('re-places on a code of replace_on, waits on any other', () => {
    const replaceOn = ['ResourceExhausted', 'Unavailable'];
    expect(classifyRefusal('ResourceExhausted', replaceOn)).toBe('node');
    expect(classifyRefusal('Unavailable', replaceOn)).toBe('node');
    expect(classifyRefusal('Internal', replaceOn)).toBe('wait');
  });

  it('waits on every code when the template names none (as before re-placement)', () => {
    expect(classifyRefusal('ResourceExhausted')).toBe('wait');
    expect(classifyRefusal('Unavailable', [])).toBe('wait');
  });
});

describe('nodeRefusal', () => {
  it("reads a kubelet event of the pod's uid whose code is in replace_on", () => {
    expect(
      nodeRefusal(kubeletEvent('ResourceExhausted'), podOf('uid-1'), ['ResourceExhausted']),
    ).toEqual({
      code: 'ResourceExhausted',
      reason: 'no sandbox capacity left',
      decisive: false,
    });
  });

  it('ignores another pod, another code, and a template without replace_on', () => {
    expect(
      nodeRefusal(kubeletEvent('ResourceExhausted'), podOf('uid-2'), ['ResourceExhausted']),
    ).toBe(undefined);
    expect(nodeRefusal(kubeletEvent('Unavailable'), podOf('uid-1'), ['ResourceExhausted'])).toBe(
      undefined,
    );
    expect(nodeRefusal(kubeletEvent('ResourceExhausted'), podOf('uid-1'), [])).toBeUndefined();
    expect(
      nodeRefusal(kubeletEvent('InvalidArgument'), podOf('uid-1'), ['ResourceExhausted']),
    ).toBe(undefined);
  });
});

describe('the pod of a placement', () => {
  const input = {
    sandboxId: 'sbx_abc',
    generation: 1,
    template: 'base',
    image: 'ghcr.io/durable-sandbox/base:1',
    resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
  };

  it("keeps placement 1's name and spec as before re-placement", () => {
    expect(podNameFor('sbx_abc', 1)).toBe('sbx-abc-g1');
    expect(podNameFor('sbx_abc', 1, 1)).toBe('sbx-abc-g1');
    const pod = sandboxPod(input);
    expect(pod.metadata?.name).toBe('sbx-abc-g1');
    expect(pod.spec?.affinity).toBeUndefined();
    expect(pod.metadata?.annotations).not.toHaveProperty('durable-sandbox.dev/placement');
  });

  it('names later placements -p<n> and keeps them off every node that refused', () => {
    const pod = sandboxPod({ ...input, placement: 3, avoidNodes: ['node-a', 'node-b'] });
    expect(pod.metadata?.name).toBe('sbx-abc-g1-p3');
    expect(pod.metadata?.annotations?.['durable-sandbox.dev/placement']).toBe('3');
    expect(
      pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    ).toEqual({
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: 'kubernetes.io/hostname', operator: 'NotIn', values: ['node-a', 'node-b'] },
          ],
        },
      ],
    });
    expect(nodeAffinityAllows(pod.spec, nodeLabels('node-a'))).toBe(false);
    expect(nodeAffinityAllows(pod.spec, nodeLabels('node-c'))).toBe(true);
  });

  it('reads the placement back from the annotation: absent 1, malformed NaN', () => {
    expect(placementOf(sandboxPod(input))).toBe(1);
    expect(placementOf(sandboxPod({ ...input, placement: 3 }))).toBe(3);
    expect(placementOf({})).toBe(1);
    const annotated = (value: string) => ({
      metadata: { annotations: { 'durable-sandbox.dev/placement': value } },
    });
    expect(placementOf(annotated('2'))).toBe(2);
    expect(placementOf(annotated('two'))).toBeNaN();
    expect(placementOf(annotated(''))).toBe(0);
  });

  it('reads the placement back from a pod name, and only from its own generation', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^sbx_[a-z0-9]{1,12}$/),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 10 }),
        (sandboxId, generation, placement) => {
          const name = podNameFor(sandboxId, generation, placement);
          expect(placementOfPodName(name, sandboxId, generation)).toBe(placement);
          expect(placementOfPodName(name, sandboxId, generation + 1)).toBeUndefined();
        },
      ),
    );
    for (const name of ['sbx-abc-g1-p', 'sbx-abc-g1-p1', 'sbx-abc-g1-p01', 'sbx-abc-g12', 'x']) {
      expect(placementOfPodName(name, 'sbx_abc', 1), name).toBeUndefined();
    }
  });
});
