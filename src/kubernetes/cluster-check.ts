/**
 * Can a process of the service use the cluster? Reachable, credentials accepted, and the
 * permissions that process needs granted, asked with SelfSubjectAccessReviews (one per verb and
 * resource). Each process asks for its own needs only: the worker for {@link WORKER_PERMISSIONS}
 * (the Role of deploy/rbac.yaml), the API for {@link API_PERMISSIONS} (none: its account is
 * bound to no Role, so a process that needs nothing only proves who it is, with one
 * SelfSubjectReview, which every authenticated account may make). Used by the API's `/readyz`
 * and creates and by the worker's health check (docs/api.md, "Readiness").
 * Source: Kubernetes "Authorization", "Checking API access"; `kubectl auth whoami`
 * (authentication.k8s.io/v1 SelfSubjectReview, GA in v1.28).
 */
import { AuthenticationV1Api, AuthorizationV1Api } from '@kubernetes/client-node';
import { classifyApiserverError } from './apiserver-errors.js';
import type { KubernetesClient } from './client.js';

/** One rule a process needs in the sandbox namespace: a core-group resource and its verbs. */
export interface ClusterPermission {
  resource: string;
  verbs: readonly string[];
}

/**
 * What the worker does in the sandbox namespace: exactly the rules of deploy/rbac.yaml's Role.
 * The pods rules are required; without the events rule creates still work but a node's refusal
 * is no longer seen (the events watch degrades: docs/architecture.md, "How a create works"), so
 * its absence is a warning, not a failure.
 */
export const WORKER_PERMISSIONS: readonly ClusterPermission[] = [
  { resource: 'pods', verbs: ['create', 'get', 'list', 'watch', 'update', 'delete'] },
  { resource: 'events', verbs: ['get', 'list', 'watch'] },
];

/**
 * What the API does in the sandbox namespace: nothing. Its only apiserver call is this check
 * (src/api/readiness.ts); creates, waits and deletes are the worker's. deploy/ binds its account to
 * no Role, so a bug in the HTTP layer cannot make pods.
 */
export const API_PERMISSIONS: readonly ClusterPermission[] = [];

/**
 * Answers to a SelfSubjectAccessReview that say the review cannot be asked here, not that a
 * permission is missing: the API is not served (404: an apiserver without
 * `authorization.k8s.io`, or a proxy that does not pass it), not allowed as a method (405), not
 * implemented (501), or the account may not create reviews (403). The check then reports a
 * warning and creates go on: they still fail clearly (`unavailable`, naming the verb) when a
 * permission really is missing.
 */
const CANNOT_ASK_STATUSES: ReadonlySet<number> = new Set([403, 404, 405, 501]);

/** Resources whose missing permissions only degrade the service. */
const DEGRADING_RESOURCES: ReadonlySet<string> = new Set(['events']);

/**
 * Result of {@link checkCluster}: usable (perhaps with a warning naming a degrading permission
 * that is missing), or a message naming what is wrong.
 */
export type ClusterReport = { ok: true; warning?: string } | { ok: false; problem: string };

/**
 * Asks the apiserver, for every verb and resource of `permissions`, whether the process's
 * account may do it; with no permissions (the API), asks only who the account is (one
 * SelfSubjectReview), which proves the apiserver reachable and the credentials accepted.
 * Never throws: every failure becomes the report's `problem`, e.g.
 * `the apiserver at https://… cannot be reached: connect ECONNREFUSED …`,
 * `the apiserver refused the kubeconfig's credentials (401 Unauthorized)`,
 * `the service account may not create pods in namespace "sandboxes" (apply deploy/rbac.yaml)`.
 * @param permissions {@link WORKER_PERMISSIONS} or {@link API_PERMISSIONS}
 */
export async function checkCluster(
  client: KubernetesClient,
  permissions: readonly ClusterPermission[],
): Promise<ClusterReport> {
  const server = client.kubeConfig.getCurrentCluster()?.server ?? '(no server)';
  let authorization: AuthorizationV1Api;
  let authentication: AuthenticationV1Api;
  try {
    authorization = client.kubeConfig.makeApiClient(AuthorizationV1Api);
    authentication = client.kubeConfig.makeApiClient(AuthenticationV1Api);
  } catch (err) {
    return { ok: false, problem: `the kubeconfig cannot work: ${(err as Error).message}` };
  }
  const asks = permissions.flatMap(({ resource, verbs }) =>
    verbs.map((verb) => ({ resource, verb })),
  );
  let answers: boolean[];
  try {
    if (asks.length === 0) {
      await authentication.createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      return { ok: true };
    }
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
        if (answer.status !== undefined && asks.length === 0) {
          // Any other answer to "who am I" (an apiserver before v1.28 answers 404) still came
          // from a reachable apiserver that accepted the credentials: 401 is decided first.
          return { ok: true };
        }
        if (answer.status !== undefined && CANNOT_ASK_STATUSES.has(answer.status)) {
          return {
            ok: true,
            warning:
              `the apiserver at ${server} cannot answer access reviews (${answer.status}: ` +
              `${answer.message}), so the permissions of deploy/rbac.yaml are not checked; a ` +
              `create that lacks one fails as unavailable, naming it`,
          };
        }
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
