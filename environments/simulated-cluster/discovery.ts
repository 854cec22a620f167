/**
 * Discovery documents (`/api`, `/apis`, `/api/v1`, `/version`): enough for kubectl to map
 * `pods`/`po` and `events`/`ev` to the core v1 API. Served as plain `application/json`, so
 * kubectl falls back from aggregated discovery to the legacy documents.
 */

/** `GET /version`: version.Info with gitVersion `v1.31.0-sim`. */
export function versionInfo(): Record<string, string> {
  return {
    major: '1',
    minor: '31',
    gitVersion: 'v1.31.0-sim',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2024-08-13T00:00:00Z',
    goVersion: 'go1.22.5',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

/** `GET /api`: APIVersions listing only `v1`. */
export function apiVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** `GET /apis`: an APIGroupList with no groups (only the core group is served). */
export function apiGroupList(): Record<string, unknown> {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [] };
}

/** `GET /api/v1`: the APIResourceList for pods and events. */
export function coreV1Resources(): Record<string, unknown> {
  return {
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: [
      {
        name: 'pods',
        singularName: 'pod',
        namespaced: true,
        kind: 'Pod',
        verbs: ['create', 'delete', 'get', 'list', 'watch'],
        shortNames: ['po'],
        categories: ['all'],
      },
      {
        name: 'events',
        singularName: 'event',
        namespaced: true,
        kind: 'Event',
        verbs: ['create', 'get', 'list', 'watch'],
        shortNames: ['ev'],
      },
    ],
  };
}
