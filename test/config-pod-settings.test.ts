/**
 * SANDBOX_TEMPLATES' pod-isolation fields (docs/configuration.md, "Templates"):
 * `run_as_non_root`, `runtime_class_name`, `node_selector` and `tolerations` are read and
 * defaulted, refused with a message naming the field when kube-apiserver would refuse the pod,
 * and the pod the worker builds from them carries them with the restrictive securityContext.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { podSettingsOf } from '../src/config/pod-settings.js';
import { sandboxPod } from '../src/kubernetes/pod-spec.js';

function templates(json: unknown) {
  return loadConfig({ SANDBOX_TEMPLATES: JSON.stringify(json) }).templates;
}

function refusal(json: unknown): string {
  try {
    templates(json);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected SANDBOX_TEMPLATES to be refused');
}

const ISOLATED = {
  image: 'i:1',
  runtime_class_name: 'gvisor',
  node_selector: { 'example.com/pool': 'sandboxes' },
  tolerations: [
    { key: 'example.com/sandboxes', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', tolerationSeconds: 30 },
  ],
};

describe('SANDBOX_TEMPLATES pod-isolation fields', () => {
  it('reads them, and defaults to a non-root user with no RuntimeClass, selector or tolerations', () => {
    const catalog = templates({ isolated: ISOLATED, plain: { image: 'i:1' } });
    expect(podSettingsOf(catalog.isolated!)).toEqual({
      runAsNonRoot: true,
      runtimeClassName: 'gvisor',
      nodeSelector: { 'example.com/pool': 'sandboxes' },
      tolerations: ISOLATED.tolerations,
    });
    expect(podSettingsOf(catalog.plain!)).toEqual({ runAsNonRoot: true });
  });

  it('runs as root only for a template that opts out with run_as_root (or the older run_as_non_root: false)', () => {
    const catalog = templates({
      rooted: { image: 'i:1', run_as_root: true },
      older: { image: 'i:1', run_as_non_root: false },
      said: { image: 'i:1', run_as_root: false, run_as_non_root: true },
    });
    expect(podSettingsOf(catalog.rooted!)).toEqual({ runAsNonRoot: false });
    expect(podSettingsOf(catalog.older!)).toEqual({ runAsNonRoot: false });
    expect(podSettingsOf(catalog.said!)).toEqual({ runAsNonRoot: true });
    expect(refusal({ base: { image: 'i:1', run_as_root: true, run_as_non_root: true } })).toBe(
      'SANDBOX_TEMPLATES: base.run_as_non_root: contradicts run_as_root: true; set run_as_root alone',
    );
  });

  it('refuses values kube-apiserver would refuse, naming the field', () => {
    expect(refusal({ base: { image: 'i:1', run_as_non_root: 'yes' } })).toMatch(
      /^SANDBOX_TEMPLATES: base\.run_as_non_root: /,
    );
    expect(refusal({ base: { image: 'i:1', run_as_root: 'yes' } })).toMatch(
      /^SANDBOX_TEMPLATES: base\.run_as_root: /,
    );
    expect(refusal({ base: { image: 'i:1', runtime_class_name: 'gVisor_1' } })).toBe(
      'SANDBOX_TEMPLATES: base.runtime_class_name: must be a RuntimeClass name (a DNS-1123 subdomain, e.g. "gvisor")',
    );
    expect(refusal({ base: { image: 'i:1', node_selector: { 'bad key!': 'x' } } })).toMatch(
      /^SANDBOX_TEMPLATES: base\.node_selector\.bad key!: must be a Kubernetes label key/,
    );
    expect(refusal({ base: { image: 'i:1', node_selector: { pool: 'a'.repeat(64) } } })).toMatch(
      /^SANDBOX_TEMPLATES: base\.node_selector\.pool: must be a Kubernetes label value/,
    );
    expect(
      refusal({ base: { image: 'i:1', tolerations: [{ key: 'k', operator: 'Maybe' }] } }),
    ).toMatch(/^SANDBOX_TEMPLATES: base\.tolerations\.0\.operator: /);
    expect(refusal({ base: { image: 'i:1', tolerations: [{ value: 'v' }] } })).toBe(
      'SANDBOX_TEMPLATES: base.tolerations.0.operator: must be "Exists" when key is empty (it then tolerates every taint)',
    );
    expect(
      refusal({
        base: { image: 'i:1', tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] },
      }),
    ).toBe('SANDBOX_TEMPLATES: base.tolerations.0.value: must be empty when operator is "Exists"');
    expect(
      refusal({
        base: {
          image: 'i:1',
          tolerations: [{ key: 'k', effect: 'NoSchedule', tolerationSeconds: 5 }],
        },
      }),
    ).toBe(
      'SANDBOX_TEMPLATES: base.tolerations.0.tolerationSeconds: needs effect "NoExecute" (it says how long the pod stays after such a taint)',
    );
    expect(refusal({ base: { image: 'i:1', tolerations: [{ key: 'k', colour: 'red' }] } })).toMatch(
      /^SANDBOX_TEMPLATES: base\.tolerations\.0/,
    );
  });
});

describe("the sandbox pod's securityContext", () => {
  const input = {
    sandboxId: 'sbx_abc',
    generation: 1,
    template: 'base',
    image: 'i:1',
    resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
  };

  it('meets Pod Security restricted by default: non-root, RuntimeDefault seccomp, no privilege escalation, no capability', () => {
    const pod = sandboxPod(input);
    expect(pod.spec?.securityContext).toEqual({
      seccompProfile: { type: 'RuntimeDefault' },
      runAsNonRoot: true,
    });
    expect(pod.spec?.containers[0]?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.spec).not.toHaveProperty('runtimeClassName');
    expect(pod.spec).not.toHaveProperty('nodeSelector');
    expect(pod.spec).not.toHaveProperty('tolerations');
  });

  it("carries the template's runAsNonRoot, RuntimeClass, node selector and tolerations", () => {
    const settings = podSettingsOf(templates({ isolated: ISOLATED }).isolated!);
    const pod = sandboxPod({ ...input, settings });
    expect(pod.spec).toMatchObject({
      securityContext: { seccompProfile: { type: 'RuntimeDefault' }, runAsNonRoot: true },
      runtimeClassName: 'gvisor',
      nodeSelector: { 'example.com/pool': 'sandboxes' },
      tolerations: ISOLATED.tolerations,
    });
  });
});
