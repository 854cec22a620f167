/**
 * Which addresses a webhook may be delivered to (docs/security.md, "Webhook targets (SSRF)"):
 * none of the special-purpose ranges below, unless the operator allow-lists a range with
 * WEBHOOK_ALLOWED_CIDRS. Checked against every address the URL's host resolves to, at every
 * attempt, and the connection then goes to exactly those addresses (src/webhooks/http-delivery.ts),
 * so a DNS answer that changes between the check and the connection cannot reach a refused one.
 *
 * Ranges from the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890), plus the
 * cloud metadata addresses, which fall in link-local (169.254.169.254, AWS/GCP/Azure),
 * unique-local (fd00:ec2::254, AWS IPv6) or shared address space (100.100.100.200, Alibaba).
 * IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) are checked as the IPv4 address they map
 * (node:net BlockList does this).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** The refused ranges: [network, prefix length, family, what it is]. */
export const REFUSED_RANGES: ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'this network'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared address space (carrier-grade NAT, Alibaba metadata)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata 169.254.169.254)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved, broadcast'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64 (may map to a private IPv4 address)'],
  ['64:ff9b:1::', 48, 'ipv6', 'local-use NAT64'],
  ['100::', 64, 'ipv6', 'discard-only'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['2002::', 16, 'ipv6', '6to4 (may map to a private IPv4 address)'],
  ['fc00::', 7, 'ipv6', 'unique-local (AWS metadata fd00:ec2::254)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

/** Thrown for a malformed WEBHOOK_ALLOWED_CIDRS entry (src/config/index.ts wraps it). */
export class CidrListError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CidrListError';
  }
}

/**
 * Parses a comma-separated list of CIDRs (`127.0.0.1/32, 10.1.0.0/16, ::1/128`); an entry
 * without a prefix is one address. Empty or unset: none.
 * @throws CidrListError naming the first malformed entry
 */
export function parseCidrList(raw: string | undefined): string[] {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= max);
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new CidrListError(`"${entry}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
    }
  }
  return entries;
}

/** Decides whether a webhook may connect to an address. */
export class WebhookAddressGuard {
  private readonly refused = new BlockList();
  private readonly allowed = new BlockList();
  private readonly reasons: Array<{ list: BlockList; reason: string }> = [];

  /** @param allowedCidrs CIDRs the operator allow-lists (from {@link parseCidrList}) */
  constructor(readonly allowedCidrs: readonly string[] = []) {
    for (const [network, prefix, family, reason] of REFUSED_RANGES) {
      this.refused.addSubnet(network, prefix, family);
      const one = new BlockList();
      one.addSubnet(network, prefix, family);
      this.reasons.push({ list: one, reason });
    }
    for (const cidr of allowedCidrs) {
      const [address = '', prefix] = cidr.split('/');
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      this.allowed.addSubnet(address, Number(prefix ?? (family === 'ipv6' ? 128 : 32)), family);
    }
  }

  /**
   * Why `address` is refused (the range's description), or null when a webhook may connect to
   * it: outside every refused range, or inside an allow-listed one.
   * @param address an IPv4 or IPv6 address as DNS answers it
   */
  refusal(address: string): string | null {
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (isIP(address) === 0) return 'not an IP address';
    if (this.allowed.check(address, family)) return null;
    if (!this.refused.check(address, family)) return null;
    return this.reasons.find(({ list }) => list.check(address, family))?.reason ?? 'refused';
  }
}

/** One address a host resolves to, as node:dns `lookup` answers it. */
export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

/** Resolves a host name to all its addresses (node:dns `lookup` with `all: true` by default). */
export type HostLookup = (host: string) => Promise<ResolvedAddress[]>;

const systemLookup: HostLookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Thrown when a webhook URL may not be reached: its scheme, or an address it resolves to. */
export class WebhookTargetRefusedError extends Error {
  /**
   * @param refused the refused address and its range's description (`loopback`, …); absent when
   *   the scheme is what is refused
   */
  constructor(
    message: string,
    readonly refused?: { host: string; address: string; reason: string },
  ) {
    super(message);
    this.name = 'WebhookTargetRefusedError';
  }
}

/**
 * The one rule of where a webhook may go, for delivery (each attempt, src/webhooks/http-delivery.ts)
 * and registration (src/api/handlers/webhook-routes.ts) alike: the URL is http or https, and every address
 * its host is (an IP literal) or resolves to is allowed by `guard`.
 * @returns the vetted addresses (delivery connects to exactly these)
 * @throws WebhookTargetRefusedError naming the address and its range (`127.0.0.2 (loopback)`)
 * @throws the DNS error (`ENOTFOUND`, …), or the signal's reason once it aborts
 */
export async function vetWebhookTarget(
  target: URL,
  guard: WebhookAddressGuard,
  signal: AbortSignal,
  lookup: HostLookup = systemLookup,
): Promise<ResolvedAddress[]> {
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    throw new WebhookTargetRefusedError(`scheme ${target.protocol} is not http or https`);
  }
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host);
  const addresses = literal
    ? [{ address: host, family: literal }]
    : await abortable(lookup(host), signal);
  for (const { address } of addresses) {
    const reason = guard.refusal(address);
    if (reason === null) continue;
    const what = literal
      ? `${address} (${reason}) is not an address webhooks may reach`
      : `${host} resolves to ${address} (${reason}), not an address webhooks may reach`;
    throw new WebhookTargetRefusedError(`${what}; WEBHOOK_ALLOWED_CIDRS does not allow it`, {
      host,
      address,
      reason,
    });
  }
  return addresses;
}

/** `promise`, or the signal's reason once it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    promise.then(resolve, reject);
  });
}
