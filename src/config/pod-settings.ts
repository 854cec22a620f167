/**
 * The pod-isolation fields of a SANDBOX_TEMPLATES entry (docs/configuration.md, "Templates"):
 * `run_as_root` (and the older `run_as_non_root`), `runtime_class_name`, `node_selector` and
 * `tolerations`, checked with the
 * rules kube-apiserver applies to the same pod fields (k8s.io/apimachinery validation:
 * qualified names, label values, DNS-1123 subdomains; core/v1 toleration rules), so a template
 * the apiserver would refuse stops the process at start instead of failing every create.
 */
import { z } from 'zod';
import {
  isLabelValue,
  isQualifiedName,
  TAINT_EFFECTS,
  TOLERATION_OPERATORS,
  type SandboxPodSettings,
  type SandboxToleration,
} from '../../contract/index.js';

/** A DNS-1123 subdomain (RuntimeClass names, label key prefixes): at most 253 characters. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_KEY_RULE = 'must be a Kubernetes label key such as "example.com/pool"';
const qualifiedName = z.string().refine(isQualifiedName, LABEL_KEY_RULE);
const labelValue = z
  .string()
  .refine(isLabelValue, 'must be a Kubernetes label value (at most 63 of A-Z a-z 0-9 - _ .)');

const toleration = z
  .object({
    key: z.union([z.literal(''), qualifiedName]).optional(),
    operator: z.enum(TOLERATION_OPERATORS).optional(),
    value: labelValue.optional(),
    effect: z.union([z.literal(''), z.enum(TAINT_EFFECTS)]).optional(),
    tolerationSeconds: z.number().int().nonnegative().optional(),
  })
  .strict()
  .superRefine((t, ctx) => {
    // The rules of core/v1 validation (validateTolerations).
    if (!t.key && t.operator !== 'Exists') {
      ctx.addIssue({
        code: 'custom',
        path: ['operator'],
        message: 'must be "Exists" when key is empty (it then tolerates every taint)',
      });
    }
    if (t.operator === 'Exists' && t.value) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'must be empty when operator is "Exists"',
      });
    }
    if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute') {
      ctx.addIssue({
        code: 'custom',
        path: ['tolerationSeconds'],
        message: 'needs effect "NoExecute" (it says how long the pod stays after such a taint)',
      });
    }
  });

/** The zod shape of the pod-isolation fields, merged into the template schema (src/config/index.ts). */
export const podSettingsFields = {
  run_as_root: z.boolean().optional(),
  run_as_non_root: z.boolean().optional(),
  runtime_class_name: z
    .string()
    .max(253)
    .regex(DNS_SUBDOMAIN, 'must be a RuntimeClass name (a DNS-1123 subdomain, e.g. "gvisor")')
    .optional(),
  node_selector: z
    .record(z.string(), labelValue)
    .superRefine((labels, ctx) => {
      // Checked here rather than as the record's key schema, whose refusal names no rule.
      for (const key of Object.keys(labels).filter((key) => !isQualifiedName(key))) {
        ctx.addIssue({ code: 'custom', path: [key], message: LABEL_KEY_RULE });
      }
    })
    .optional(),
  tolerations: z.array(toleration).optional(),
};

/** The pod-isolation fields of a template as SANDBOX_TEMPLATES spells them. */
export interface TemplatePodFields {
  /**
   * The opt-out for an image that needs root: no `securityContext.runAsNonRoot`, so the pod
   * meets Pod Security `baseline` only and a namespace enforcing `restricted` (deploy/'s
   * `sandboxes`) refuses it. Default false: every sandbox runs as a non-root user (the image
   * must name a numeric non-root USER, or the kubelet refuses to start it).
   */
  run_as_root?: boolean;
  /**
   * The setting of the release before, still read: `false` is `run_as_root: true`, `true` the
   * default. A template that sets both to the same side is refused (src/config/index.ts).
   */
  run_as_non_root?: boolean;
  /** A RuntimeClass the pod runs with (gVisor, Kata); it must exist in the cluster. */
  runtime_class_name?: string;
  /** Node labels the pod's node must carry, e.g. `{"example.com/pool": "sandboxes"}`. */
  node_selector?: Record<string, string>;
  /** Taints the pod tolerates, in core/v1 `Toleration` spelling. */
  tolerations?: SandboxToleration[];
}

/** Whether a template opted out of `runAsNonRoot` (`run_as_root`, or `run_as_non_root: false`). */
export function runsAsRoot(
  template: Pick<TemplatePodFields, 'run_as_root' | 'run_as_non_root'>,
): boolean {
  return template.run_as_root ?? template.run_as_non_root === false;
}

/** The pod settings a template decides (contract/template.ts), with the defaults applied. */
export function podSettingsOf(template: TemplatePodFields): SandboxPodSettings {
  return {
    runAsNonRoot: !runsAsRoot(template),
    ...(template.runtime_class_name ? { runtimeClassName: template.runtime_class_name } : {}),
    ...(template.node_selector && Object.keys(template.node_selector).length > 0
      ? { nodeSelector: { ...template.node_selector } }
      : {}),
    ...(template.tolerations?.length
      ? { tolerations: template.tolerations.map((t) => ({ ...t })) }
      : {}),
  };
}
