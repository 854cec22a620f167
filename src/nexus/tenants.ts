/**
 * Which tenant a Nexus caller acts for (docs/security.md, "Nexus callers"): the operator maps
 * each calling Temporal namespace to one tenant with NEXUS_TENANTS (`namespace:tenant` pairs,
 * comma separated). The calling namespace is read from the callback URL the Temporal server
 * builds for every Nexus start it sends for a caller's workflow, never from the operation's
 * input.
 */
import type * as nexus from 'nexus-rpc';

/**
 * Calling namespace → tenant (config.nexusTenants). Empty: no namespace may call (the worker
 * serves no Nexus service).
 */
export type NexusTenants = ReadonlyMap<string, string>;

/**
 * The whole path of a callback URL the server made from its default template
 * (`/namespaces/<ns>/nexus/callback`), the namespace a name of letters, digits, `.`, `_` and `-`.
 * Anchored at both ends and never URL-decoded: the server fills the name in without escaping and
 * (v1.29.1) checks a new namespace's name only for its length, so a namespace named
 * `x/namespaces/acme` or `%61cme` would otherwise pass for `acme`.
 */
const CALLBACK_PATH = /^\/namespaces\/([A-Za-z0-9._-]+)\/nexus\/callback$/;

/**
 * The calling namespace: the one in the start request's callback URL, which the Temporal server
 * builds from the caller's namespace (`component.nexusoperations.callback.endpoint.template`,
 * `…/namespaces/{{.NamespaceName}}/nexus/callback`) in a field of the request a caller's
 * workflow cannot set. The `nexus-link` header also names a namespace, but a caller's workflow
 * can replace it with its own Nexus header (test/nexus.test.ts shows it), so a link may only
 * confirm: one naming another namespace refuses the request.
 * @returns undefined when the callback URL's path is not exactly `/namespaces/<ns>/nexus/callback`
 *   (a server whose callbacks use `temporal://system`, a template with a path prefix, a name with
 *   `/` or `%`), or a workflow-event link names another namespace
 */
export function callerNamespaceOf(
  ctx: Pick<nexus.StartOperationContext, 'inboundLinks' | 'callbackUrl'>,
): string | undefined {
  let fromCallback: string | undefined;
  try {
    const match = ctx.callbackUrl ? CALLBACK_PATH.exec(new URL(ctx.callbackUrl).pathname) : null;
    fromCallback = match ? match[1] : undefined;
  } catch {
    return undefined;
  }
  if (fromCallback === undefined) return undefined;
  for (const link of ctx.inboundLinks) {
    const match = /^\/namespaces\/([^/]+)\/workflows\//.exec(link.url.pathname);
    if (
      link.url.protocol === 'temporal:' &&
      match &&
      decodeURIComponent(match[1]!) !== fromCallback
    ) {
      return undefined;
    }
  }
  return fromCallback;
}
