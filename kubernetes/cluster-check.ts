/**
 * Can the service use the cluster? Reachable, credentials accepted, and the permissions of
 * deploy/rbac.yaml granted, asked with SelfSubjectAccessReviews (one per verb and resource).
 * Used by the API's `/readyz` and creates and by the worker's health check (docs/api.md,
 * "Readiness"). Source: Kubernetes "Authorization", "Checking API access".
 */
import { AuthorizationV1Api } from '@kubernetes/client-node';
import { classifyApiserverError } from './apiserver-errors.js';
import type { KubernetesClient } from './client.js';

/**
 * What the service does in the sandbox namespace: exactly the rules of deploy/rbac.yaml. The
 * pods rules are required; without the events rule creates still work but a node's refusal is
 * no longer seen (the events watch degrades: docs/architecture.md, "How a create works"), so its absence is
 * a warning, not a failure.
 */
export const REQUIRED_PERMISSIONS: ReadonlyArray<{ resource: string; verbs: readonly string[] }> = [
  { resource: 'pods', verbs: ['create', 'get', 'list', 'watch', 'delete'] },
  { resource: 'events', verbs: ['get', 'list', 'watch'] },
];

/** Resources whose missing permissions only degrade the service. */
const DEGRADING_RESOURCES: ReadonlySet<string> = new Set(['events']);

/**
 * Result of {@link checkCluster}: usable (perhaps with a warning naming a degrading permission
 * that is missing), or a message naming what is wrong.
 */
export type ClusterReport = { ok: true; warning?: string } | { ok: false; problem: string };

/**
 * Asks the apiserver, for every required verb and resource, whether the service's account may
 * do it. Never throws: every failure becomes the report's `problem`, e.g.
 * `the apiserver at https://… cannot be reached: connect ECONNREFUSED …`,
 * `the apiserver refused the kubeconfig's credentials (401 Unauthorized)`,
 * `the service account may not create pods in namespace "sandboxes" (apply deploy/rbac.yaml)`.
 */
export async function checkCluster(client: KubernetesClient): Promise<ClusterReport> {
  const server = client.kubeConfig.getCurrentCluster()?.server ?? '(no server)';
  let authorization: AuthorizationV1Api;
  try {
    authorization = client.kubeConfig.makeApiClient(AuthorizationV1Api);
  } catch (err) {
    return { ok: false, problem: `the kubeconfig cannot work: ${(err as Error).message}` };
  }
  const asks = REQUIRED_PERMISSIONS.flatMap(({ resource, verbs }) =>
    verbs.map((verb) => ({ resource, verb })),
  );
  let answers: boolean[];
  try {
    answers = await Promise.all(
      asks.map(async ({ resource, verb }) => {
        const review = await authorization.createSelfSubjectAccessReview({
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: { namespace: client.namespace, verb, resource } },
          },
        });
        return review.status?.allowed === true;
      }),
    );
  } catch (err) {
    const answer = classifyApiserverError(err);
    switch (answer.kind) {
      case 'configuration':
        return { ok: false, problem: `the kubeconfig cannot work: ${answer.message}` };
      case 'unauthorized':
        return {
          ok: false,
          problem: `the apiserver at ${server} refused the kubeconfig's credentials (401 Unauthorized)`,
        };
      case 'transient':
        return {
          ok: false,
          problem: `the apiserver at ${server} cannot be reached: ${networkMessage(err, answer.message)}`,
        };
      default:
        return {
          ok: false,
          problem: `the apiserver at ${server} refused an access review (${answer.status}): ${answer.message}`,
        };
    }
  }
  const denied = asks.filter((_, index) => !answers[index]);
  if (denied.length === 0) return { ok: true };
  const missing = denied.map(({ verb, resource }) => `${verb} ${resource}`).join(', ');
  const message =
    `the service account may not ${missing} in namespace "${client.namespace}" ` +
    `(apply deploy/rbac.yaml)`;
  if (denied.every(({ resource }) => DEGRADING_RESOURCES.has(resource))) {
    return { ok: true, warning: `${message}; a node's refusal is not seen until the deadline` };
  }
  return { ok: false, problem: message };
}

/** `fetch failed` says nothing: the cause (ECONNREFUSED …) does. */
function networkMessage(err: unknown, fallback: string): string {
  const cause = (err as { cause?: { message?: unknown } } | null)?.cause;
  return typeof cause?.message === 'string' ? cause.message : fallback;
}
