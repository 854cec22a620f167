/**
 * Which tenant a Nexus caller acts for (docs/security.md, "Nexus callers"): the operator maps
 * each calling Temporal namespace to one tenant with NEXUS_TENANTS (`namespace:tenant` pairs,
 * comma separated). The calling namespace is read from the link the Temporal server attaches
 * to every Nexus start it sends for a caller's workflow (the workflow event that scheduled the
 * operation, `temporal:///namespaces/<namespace>/workflows/…`), never from the operation's input.
 */
import type * as nexus from 'nexus-rpc';

/**
 * Calling namespace → tenant (config.nexusTenants). Empty: no namespace may call (the worker
 * serves no Nexus service).
 */
export type NexusTenants = ReadonlyMap<string, string>;

/**
 * The calling namespace: the namespace of the workflow events the start request links to.
 * @returns undefined when the request carries no Temporal workflow-event link, or links naming
 *   more than one namespace (a caller's own `nexus-link` header beside the server's: refused)
 */
export function callerNamespaceOf(
  ctx: Pick<nexus.StartOperationContext, 'inboundLinks'>,
): string | undefined {
  const namespaces = new Set<string>();
  for (const link of ctx.inboundLinks) {
    const match = /^\/namespaces\/([^/]+)\/workflows\//.exec(link.url.pathname);
    if (link.url.protocol === 'temporal:' && match) namespaces.add(decodeURIComponent(match[1]!));
  }
  return namespaces.size === 1 ? [...namespaces][0] : undefined;
}
