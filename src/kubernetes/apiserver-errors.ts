/**
 * How the service reads every error of an apiserver call (create, get, list, delete, and the
 * watches): one table, so a reader checks the behaviour against the docs/api.md ("Errors") by
 * reading it. The apiserver's error body is a `meta/v1` Status: `kind: Status`, `code` (the
 * HTTP status), `reason` (`Forbidden`, `Invalid`, `NotFound`, …), `message`, `details`.
 * Source: Kubernetes API concepts, "Responses" and "Status"; the admission messages of the
 * LimitRanger and ResourceQuota admission plugins; the RBAC authorizer's refusal wording;
 * kube-apiserver v1.34's start-up (below, {@link PERMISSION_BOUND_MS}).
 */
import { httpStatusOf } from './client.js';

/**
 * What an apiserver error means for the call that got it:
 * - `refused`: the apiserver refused this request for good (400, 403 from admission, 404 —
 *   for a create: the namespace is missing —, 422, any other 4xx); retrying cannot help.
 * - `quota`: a ResourceQuota refused it (403 whose message says `exceeded quota`): capacity,
 *   not a bad request; it may pass later.
 * - `permission`: RBAC refused the service's account (403 `User "…" cannot <verb> resource
 *   "…"`): either a configuration error of the installation (deploy/rbac.yaml), or a
 *   kube-apiserver that has just started and whose RBAC caches are still filling; retried with
 *   back-off until {@link PERMISSION_BOUND_MS}, then a configuration error.
 * - `unauthorized`: 401, the credentials were not accepted; retried with back-off (tokens
 *   rotate, clocks skew) until {@link UNAUTHORIZED_BOUND_MS}.
 * - `configuration`: the client cannot send the request at all (an `http://` server without
 *   `insecure-skip-tls-verify`, a kubeconfig without a usable cluster); retrying cannot help.
 * - `transient`: 408, 409, 429, 5xx, network errors (refused, reset, timed out), and the 403
 *   `not yet ready to handle request` of an admission plugin whose caches are not synced yet:
 *   retried.
 */
export type ApiserverErrorClass =
  'refused' | 'quota' | 'permission' | 'unauthorized' | 'configuration' | 'transient';

/** The classification table (read top to bottom; the first matching row wins). */
export const APISERVER_ERROR_POLICY = {
  /** Statuses retried as they are: the apiserver was busy, conflicted, or failed. */
  transient: new Set([408, 409, 429, 500, 502, 503, 504]),
  /** 5xx not listed above are transient too. */
  transientFrom: 500,
  unauthorized: 401,
  /**
   * A 403 whose Status message matches this comes from an admission plugin that has not synced
   * its caches yet (NamespaceLifecycle, PodNodeSelector, the webhooks: `admission.NewForbidden`
   * with "not yet ready to handle request", k8s.io/apiserver v0.34): transient.
   */
  notReady: /not yet ready to handle request/,
  /** A 403 whose Status message matches this is a quota, not a refusal of the request. */
  quota: /exceeded quota/,
  /** A 403 whose Status message matches this is RBAC, not admission. */
  permission: /cannot [a-z]+ resource/,
  /** Any other 4xx (400, 403 admission, 404, 422, …) is a permanent refusal. */
  refused: 'any other 4xx',
  /** Errors client-node raises before sending, from its configuration: never retried. */
  configuration: [
    /HTTP protocol is not allowed/,
    /Unsupported proxy type/,
    /No active cluster/,
    /kubeconfig/i,
    /Invalid URL/,
  ],
} as const;

/** How long a 401 may last before a create gives up on it, in ms. */
export const UNAUTHORIZED_BOUND_MS = 60_000;

/**
 * How long an RBAC 403 may last before a create gives up on it, in ms. kube-apiserver serves
 * requests before its RBAC informers have synced (its `/readyz` check `informer-sync` fails
 * meanwhile); until they have, the RBAC authorizer finds no binding and answers "no opinion",
 * so the request gets the same 403 `User "…" cannot <verb> resource "…"` as a grant that is
 * really missing (plugin/pkg/auth/authorizer/rbac/rbac.go and responsewriters.Forbidden in
 * kubernetes v1.34; kubernetes/kubernetes#121635 shows the window lasting minutes on a cluster
 * with 50,000 RoleBindings). The two cannot be told apart from one answer, so the refusal is
 * retried like a 401 and reported as the missing grant once it has lasted this long.
 */
export const PERMISSION_BOUND_MS = 60_000;

/** An apiserver error, classified. */
export interface ApiserverError {
  kind: ApiserverErrorClass;
  /** HTTP status, when the apiserver answered. */
  status?: number;
  /** The Status `reason` (`Forbidden`, `Invalid`, …), when the apiserver sent one. */
  reason?: string;
  /** The Status `message`, else the error's own message. */
  message: string;
}

/** The `meta/v1` Status an error of client-node carries, if it carries one. */
export function statusBodyOf(
  err: unknown,
): { code?: number; reason?: string; message?: string } | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const candidate = (err as { body?: unknown }).body;
  let body: unknown = candidate;
  if (typeof candidate === 'string') {
    try {
      body = JSON.parse(candidate);
    } catch {
      return undefined;
    }
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const status = body as { kind?: unknown; code?: unknown; reason?: unknown; message?: unknown };
  if (status.kind !== 'Status') return undefined;
  return {
    code: typeof status.code === 'number' ? status.code : undefined,
    reason: typeof status.reason === 'string' ? status.reason : undefined,
    message: typeof status.message === 'string' ? status.message : undefined,
  };
}

/**
 * Classifies an error thrown by a client-node call (or passed to a watch's `done`) by
 * {@link APISERVER_ERROR_POLICY}.
 * @returns the class, the HTTP status and reason when the apiserver answered, and the message
 *   (the Status message when there is one)
 */
export function classifyApiserverError(err: unknown): ApiserverError {
  const body = statusBodyOf(err);
  const status = httpStatusOf(err) ?? body?.code;
  const ownMessage = err instanceof Error ? err.message : String(err);
  const message = body?.message ?? ownMessage;
  const answered = { status, reason: body?.reason, message };
  const policy = APISERVER_ERROR_POLICY;
  if (status === undefined) {
    const configuration = policy.configuration.some((pattern) => pattern.test(ownMessage));
    return { kind: configuration ? 'configuration' : 'transient', message };
  }
  if (policy.transient.has(status) || status >= policy.transientFrom) {
    return { kind: 'transient', ...answered };
  }
  if (status === policy.unauthorized) return { kind: 'unauthorized', ...answered };
  if (status === 403 && policy.notReady.test(message)) return { kind: 'transient', ...answered };
  if (status === 403 && policy.quota.test(message)) return { kind: 'quota', ...answered };
  if (status === 403 && policy.permission.test(message)) {
    return { kind: 'permission', ...answered };
  }
  if (status >= 400) return { kind: 'refused', ...answered };
  return { kind: 'transient', ...answered };
}

/**
 * The part of the ResourceQuota admission's `exceeded quota: <name>, requested: …, used: …,
 * limited: …` that says what the create asked for, without `used` and `limited`: those are the
 * whole namespace's usage and quota, shared by every tenant, and a tenant must not read other
 * tenants' figures (docs/api.md, "Tenant limits"). Messages without `, used:` are returned as
 * they are. Source: the ResourceQuota admission plugin's message
 * (plugin/pkg/admission/resourcequota, kubernetes v1.34).
 * @param message the Status message of a `quota` refusal
 */
export function quotaRefusalWithoutUsage(message: string): string {
  const at = message.search(/, used: /);
  return at < 0 ? message : message.slice(0, at);
}
