/**
 * The route table: every route the API serves, in one list that both the app (src/api/app.ts) and
 * the OpenAPI check (test/api-http.test.ts) read, so the document cannot drift from the code.
 */

/** The name of a route's handler (also its OpenAPI `operationId`). */
export type RouteName =
  | 'healthz'
  | 'readyz'
  | 'openapi'
  | 'metrics'
  | 'createSandbox'
  | 'createSandboxSync'
  | 'listSandboxes'
  | 'getSandbox'
  | 'deleteSandbox'
  | 'extendSandbox'
  | 'updateSandbox'
  | 'listOperations'
  | 'getOperation'
  | 'cancelOperation'
  | 'listTemplates'
  | 'getTemplate'
  | 'getQuota'
  | 'createWebhookEndpoint'
  | 'listWebhookEndpoints'
  | 'getWebhookEndpoint'
  | 'deleteWebhookEndpoint'
  | 'rotateWebhookSecret'
  | 'recoverWebhookEvents'
  | 'listWebhookDeliveries'
  | 'listEvents';

/** One route: method, Express path, whether it needs a bearer token, its handler's name. */
export interface RouteSpec {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express 5 path syntax, e.g. `/v1/sandboxes/:id`. */
  path: string;
  auth: boolean;
  name: RouteName;
}

/** Every route, public ones first. */
export const ROUTES: readonly RouteSpec[] = [
  { method: 'get', path: '/healthz', auth: false, name: 'healthz' },
  { method: 'get', path: '/readyz', auth: false, name: 'readyz' },
  { method: 'get', path: '/openapi.json', auth: false, name: 'openapi' },
  { method: 'get', path: '/metrics', auth: false, name: 'metrics' },
  { method: 'post', path: '/v1/sandboxes', auth: true, name: 'createSandbox' },
  { method: 'get', path: '/v1/sandboxes', auth: true, name: 'listSandboxes' },
  { method: 'get', path: '/v1/sandboxes/:id', auth: true, name: 'getSandbox' },
  { method: 'delete', path: '/v1/sandboxes/:id', auth: true, name: 'deleteSandbox' },
  { method: 'patch', path: '/v1/sandboxes/:id', auth: true, name: 'updateSandbox' },
  // A custom method (AIP-136): the colon is literal, escaped for Express.
  { method: 'post', path: '/v1/sandboxes/:id\\:extend', auth: true, name: 'extendSandbox' },
  { method: 'get', path: '/v1/operations', auth: true, name: 'listOperations' },
  { method: 'get', path: '/v1/operations/:id', auth: true, name: 'getOperation' },
  { method: 'post', path: '/v1/operations/:id/cancel', auth: true, name: 'cancelOperation' },
  { method: 'post', path: '/sync/v1/sandboxes', auth: true, name: 'createSandboxSync' },
  { method: 'get', path: '/v1/templates', auth: true, name: 'listTemplates' },
  { method: 'get', path: '/v1/templates/:name', auth: true, name: 'getTemplate' },
  { method: 'get', path: '/v1/quota', auth: true, name: 'getQuota' },
  { method: 'post', path: '/v1/webhook-endpoints', auth: true, name: 'createWebhookEndpoint' },
  { method: 'get', path: '/v1/webhook-endpoints', auth: true, name: 'listWebhookEndpoints' },
  { method: 'get', path: '/v1/webhook-endpoints/:id', auth: true, name: 'getWebhookEndpoint' },
  {
    method: 'delete',
    path: '/v1/webhook-endpoints/:id',
    auth: true,
    name: 'deleteWebhookEndpoint',
  },
  {
    method: 'post',
    path: '/v1/webhook-endpoints/:id/rotate-secret',
    auth: true,
    name: 'rotateWebhookSecret',
  },
  // A custom method (AIP-136), as `:extend`; Svix's "recover", GitHub's "redeliver".
  {
    method: 'post',
    path: '/v1/webhook-endpoints/:id\\:recover',
    auth: true,
    name: 'recoverWebhookEvents',
  },
  {
    method: 'get',
    path: '/v1/webhook-endpoints/:id/deliveries',
    auth: true,
    name: 'listWebhookDeliveries',
  },
  { method: 'get', path: '/v1/events', auth: true, name: 'listEvents' },
];

/**
 * The distinct paths of `routes` in the order the app must register them: custom-method paths
 * (AIP-136, a literal `:verb` after a parameter, `/v1/sandboxes/:id\\:extend`) before the others,
 * since Express would otherwise match `/v1/sandboxes/sbx_…:extend` as `/v1/sandboxes/:id` with the
 * verb inside the id; the table's order otherwise.
 * @returns each path once, in Express syntax
 */
export function pathsInMatchOrder(routes: readonly RouteSpec[]): string[] {
  const paths = [...new Set(routes.map((route) => route.path))];
  const custom = (path: string) => path.includes('\\:');
  return [...paths.filter(custom), ...paths.filter((path) => !custom(path))];
}

/** An Express path in OpenAPI syntax: `/v1/sandboxes/:id` -> `/v1/sandboxes/{id}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/(?<!\\):([A-Za-z_]\w*)/g, '{$1}').replace(/\\:/g, ':');
}
