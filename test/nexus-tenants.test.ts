/**
 * Which namespace a Nexus start comes from (src/nexus/tenants.ts): only a callback URL whose whole
 * path is the server's default template counts, so a namespace whose name carries `/` or `%`
 * cannot pass for a mapped one.
 */
import type * as nexus from 'nexus-rpc';
import { describe, expect, it } from 'vitest';
import { callerNamespaceOf } from '../src/nexus/tenants.js';

const start = (
  callbackUrl: string | undefined,
  links: string[] = [],
): Pick<nexus.StartOperationContext, 'inboundLinks' | 'callbackUrl'> => ({
  callbackUrl,
  inboundLinks: links.map((url) => ({ url: new URL(url), type: 'temporal.api.common.v1.Link' })),
});

describe('callerNamespaceOf', () => {
  it('reads the namespace of the default callback template', () => {
    expect(callerNamespaceOf(start('http://fe:7243/namespaces/acme/nexus/callback'))).toBe('acme');
    expect(
      callerNamespaceOf(
        start('http://fe:7243/namespaces/team.a-1_b/nexus/callback', [
          'temporal:///namespaces/team.a-1_b/workflows/w/r/history',
        ]),
      ),
    ).toBe('team.a-1_b');
  });

  it.each([
    ['a name with a slash', 'http://fe/namespaces/x/namespaces/acme/nexus/callback'],
    ['a percent-encoded name', 'http://fe/namespaces/%61cme/nexus/callback'],
    ['an encoded slash', 'http://fe/namespaces/x%2Fnamespaces%2Facme/nexus/callback'],
    ['a path prefix', 'http://fe/proxy/namespaces/acme/nexus/callback'],
    ['the system callback', 'temporal://system'],
    ['no callback', undefined],
  ])('refuses %s', (_what, url) => {
    expect(callerNamespaceOf(start(url))).toBeUndefined();
  });

  it('refuses a start whose workflow link names another namespace', () => {
    expect(
      callerNamespaceOf(
        start('http://fe/namespaces/acme/nexus/callback', [
          'temporal:///namespaces/other/workflows/w/r/history',
        ]),
      ),
    ).toBeUndefined();
  });
});
