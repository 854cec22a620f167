/**
 * Admission: the worker's check, before a create or a delete touches the cluster or the store,
 * that the service decided it (docs/security.md, "What the worker trusts"). A workflow's input
 * is whatever its starter wrote, and anyone who can reach the Temporal frontend can start one;
 * the store is written only by the API (which authenticated the tenant) and by the worker. So a
 * create runs only under the workflow id of its operation, for a sandbox row that exists,
 * belongs to the input's tenant, is at the input's generation, names the input's operation as
 * its create, is still `creating`, and asks for the input's template and resources, with the
 * deadline its operation row was given and the re-placement policy of the worker's catalog; a
 * delete only under its operation's workflow id, for the operation row the API inserted for it.
 * Anything else fails with a non-retryable `NotAdmitted` failure and nothing is done.
 *
 * The pod's image and settings are not compared here: the worker takes them from its own
 * catalog (src/activities/pods.ts, {@link catalogTemplate}), whatever the input names.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { placementPolicyOf, type TemplateConfig } from '../config/index.js';
import type { Store } from '../store/index.js';
import {
  NOT_ADMITTED_FAILURE_TYPE,
  type PlacementPolicy,
  type SandboxResources,
} from '../../contract/index.js';

/** Dependencies of the admission activities. */
export interface AdmissionDeps {
  store: Store;
  /**
   * The worker's own template catalog (SANDBOX_TEMPLATES), the only source of a pod's image and
   * settings. Read at each use, so a test may change it between creates.
   */
  templates: Record<string, TemplateConfig>;
}

/** What a create's workflow input claims, as `admitCreate` checks it against the store. */
export interface AdmitCreateInput {
  operationId: string;
  sandboxId: string;
  tenantId: string;
  template: string;
  resources: SandboxResources;
  generation: number;
  attempt: number;
  /** The create's deadline, in ms from the workflow's start: the operation row's must match. */
  deadlineMs: number;
  /** The re-placement policy the create runs with: the worker's catalog's must match. */
  placement?: PlacementPolicy;
}

/** What a delete's workflow input claims, as `admitDelete` checks it against the store. */
export interface AdmitDeleteInput {
  operationId: string;
  sandboxId: string;
  tenantId: string;
  generation: number;
  createOperationId: string;
}

/** The non-retryable failure of a refused admission; its message says what did not match. */
export function notAdmitted(
  action: 'create' | 'delete',
  sandboxId: string,
  problem: string,
): ApplicationFailure {
  return ApplicationFailure.create({
    type: NOT_ADMITTED_FAILURE_TYPE,
    nonRetryable: true,
    message:
      `refused to ${action} sandbox ${sandboxId}: ${problem}; the worker carries out only a ` +
      `${action} the service's API accepted`,
  });
}

/**
 * The catalog entry of `name`.
 * @throws ApplicationFailure `NotAdmitted` when this worker's catalog has no such template
 */
export function catalogTemplate(
  templates: Record<string, TemplateConfig>,
  name: string,
  sandboxId: string,
): TemplateConfig {
  const template = Object.hasOwn(templates, name) ? templates[name] : undefined;
  if (!template) {
    throw notAdmitted(
      'create',
      sandboxId,
      `template "${name}" is not in this worker's catalog (SANDBOX_TEMPLATES)`,
    );
  }
  return template;
}

/**
 * The workflow id of the running activity's workflow: the API starts each operation's workflow
 * under the operation's id (src/api/create-flow.ts, src/api/delete-flow.ts), so a workflow under another
 * id was started by someone else.
 */
function currentWorkflowId(): string {
  return Context.current().info.workflowExecution?.workflowId ?? '(none)';
}

/**
 * Why the create's deadline is not the one its operation row was given, or undefined when it
 * is. The row stores `created_at + deadlineMs` (src/store/sandbox-create.ts), both in ms, so they match
 * exactly.
 */
function deadlineProblem(
  operation: { createdAt: string; deadlineAt: string | null } | undefined,
  deadlineMs: number,
): string | undefined {
  if (!operation?.deadlineAt) return 'its operation has no deadline';
  const stored = Date.parse(operation.deadlineAt) - Date.parse(operation.createdAt);
  return stored === deadlineMs
    ? undefined
    : `it was accepted with a deadline of ${stored} ms, not ${deadlineMs} ms`;
}

/** Whether two re-placement policies (absent: one placement) are the same. */
function samePlacement(a: PlacementPolicy | undefined, b: PlacementPolicy | undefined): boolean {
  if (!a || !b) return a === b;
  const codes = b.replaceOn;
  return (
    a.maxPlacements === b.maxPlacements &&
    a.replaceOn.length === codes.length &&
    a.replaceOn.every((code, i) => code === codes[i])
  );
}

function sameResources(a: SandboxResources, b: SandboxResources): boolean {
  return a.cpu === b.cpu && a.memoryMib === b.memoryMib && a.diskMib === b.diskMib;
}

/** Builds the admission activities over their dependencies. */
export function admissionActivities(deps: AdmissionDeps) {
  return {
    /**
     * Admits a create: the store holds its sandbox as the input describes it (see the file
     * comment) and the worker's catalog has its template.
     * @throws ApplicationFailure `NotAdmitted` (non-retryable) naming the first mismatch
     * @throws the store's error when the database fails (Temporal retries the step)
     */
    async admitCreate(input: AdmitCreateInput): Promise<void> {
      const workflowId = currentWorkflowId();
      const sandbox = await deps.store.getSandboxById(input.sandboxId);
      const operation =
        sandbox && (await deps.store.getOperation(sandbox.tenant, input.operationId));
      const problem =
        workflowId !== input.operationId
          ? `it runs under workflow id ${workflowId}, not its operation's id ${input.operationId}`
          : !sandbox
            ? 'the store holds no such sandbox'
            : sandbox.tenant !== input.tenantId
              ? `it does not belong to tenant ${input.tenantId}`
              : sandbox.generation !== input.generation
                ? `it is at generation ${sandbox.generation}, not ${input.generation}`
                : sandbox.operationId !== input.operationId
                  ? `its create is not operation ${input.operationId}`
                  : sandbox.state !== 'creating'
                    ? `it is ${sandbox.state}, not creating`
                    : sandbox.template !== input.template
                      ? `it was accepted for template ${sandbox.template}, not ${input.template}`
                      : !sameResources(sandbox.resources, input.resources)
                        ? 'it was accepted with other resources'
                        : deadlineProblem(operation ?? undefined, input.deadlineMs);
      if (problem) {
        log.warn('create not admitted', { reason: problem, tenant: input.tenantId });
        throw notAdmitted('create', input.sandboxId, problem);
      }
      const template = catalogTemplate(deps.templates, input.template, input.sandboxId);
      if (!samePlacement(placementPolicyOf(template), input.placement)) {
        const why =
          `its re-placement policy is not the one this worker's catalog gives template ` +
          `${input.template} (SANDBOX_TEMPLATES: give the API and the worker the same catalog)`;
        log.warn('create not admitted', { reason: why, tenant: input.tenantId });
        throw notAdmitted('create', input.sandboxId, why);
      }
    },

    /**
     * Admits a delete: the store holds its operation (a `sandbox.delete` of this sandbox for
     * this tenant) and the sandbox, whose create is `createOperationId` and whose generation is
     * the input's. Without it, a forged delete could cancel any create or delete any pod.
     * @throws ApplicationFailure `NotAdmitted` (non-retryable) naming the first mismatch
     * @throws the store's error when the database fails (Temporal retries the step)
     */
    async admitDelete(input: AdmitDeleteInput): Promise<void> {
      const workflowId = currentWorkflowId();
      const operation = await deps.store.getOperation(input.tenantId, input.operationId);
      const sandbox = await deps.store.getSandbox(input.tenantId, input.sandboxId);
      const problem =
        workflowId !== input.operationId
          ? `it runs under workflow id ${workflowId}, not its operation's id ${input.operationId}`
          : !operation
            ? `the store holds no operation ${input.operationId} of tenant ${input.tenantId}`
            : operation.type !== 'sandbox.delete' || operation.sandboxId !== input.sandboxId
              ? `operation ${input.operationId} is not a delete of this sandbox`
              : !sandbox
                ? `the store holds no such sandbox of tenant ${input.tenantId}`
                : sandbox.operationId !== input.createOperationId
                  ? `its create is not operation ${input.createOperationId}`
                  : sandbox.generation !== input.generation
                    ? `it is at generation ${sandbox.generation}, not ${input.generation}`
                    : undefined;
      if (problem) {
        log.warn('delete not admitted', { reason: problem, tenant: input.tenantId });
        throw notAdmitted('delete', input.sandboxId, problem);
      }
    },
  };
}
