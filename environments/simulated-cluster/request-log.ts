/**
 * The simulated apiserver's request log (`SimulatedCluster.requests`) and the one way tests read
 * it (`SimulatedCluster.requestsWhere`): each request named as Kubernetes names it (verb,
 * resource, namespace, name: Kubernetes API concepts, "Resource URIs"; kube-apiserver's
 * RequestInfo), and a query over those names, the status sent and the arrival time. A test
 * proves "no request" or "no polling" by what the server saw, so the query says in Kubernetes
 * terms which requests it counts: `{ verb: 'delete', resource: 'pods', name }`.
 */

/**
 * A request's Kubernetes verb, as the simulated apiserver served it: GET of one object `get`,
 * of a collection `list` (or `watch` with `watch=true`; the simulated apiserver serves no watch
 * of one named object, so a GET of a name is a `get` whatever its query), POST `create`, PUT
 * `update`, PATCH `patch`, DELETE of one object `delete`, of a collection `deletecollection`.
 */
export type RequestVerb =
  'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** One request the simulator served, in arrival order. */
export interface RecordedRequest {
  /** HTTP method, e.g. `GET` */
  method: string;
  /** URL path without the query, e.g. `/api/v1/namespaces/sandboxes/events` */
  path: string;
  /** Query parameters, decoded (last value wins), e.g. `{ watch: 'true', resourceVersion: '0' }` */
  query: Record<string, string>;
  /** Arrival time, epoch ms (Date.now()). */
  at: number;
  /** HTTP status sent; 0 while the response headers are not sent yet (e.g. a delayed response). */
  status: number;
  /** True for `watch=true` / `watch=1` requests. */
  watch: boolean;
  /**
   * {@link RequestVerb} of a resource request; for any other path (discovery, `/healthz`) the
   * method in lower case (`get`), as kube-apiserver names non-resource requests.
   */
  verb: RequestVerb | string;
  /**
   * The resource, plural, with `/<subresource>` for a subresource as RBAC writes it: `pods`,
   * `events`, `pods/status`, `selfsubjectreviews`. Undefined for a non-resource path.
   */
  resource?: string;
  /** The namespace of the path (`/namespaces/<namespace>/…`); undefined when cluster-wide. */
  namespace?: string;
  /**
   * The object's name: the path's (get, update, patch, delete), or for a create the body's
   * `metadata.name`; undefined for a collection request (list, watch, deletecollection).
   */
  name?: string;
  /** The body of a DELETE as sent (DeleteOptions, e.g. its `preconditions.uid`), if any. */
  deleteOptions?: unknown;
  /** `metadata.name` of a POST's or PUT's body (the object it creates or updates), if any. */
  bodyName?: string;
}

/** What {@link requestTarget} reads from a request's method and path. */
export type RequestTarget = Pick<RecordedRequest, 'verb' | 'resource' | 'namespace' | 'name'>;

/** Subresources of a namespace itself (`/api/v1/namespaces/<name>/status`), as kube-apiserver has them. */
const NAMESPACE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'finalize']);

/**
 * Names a request as kube-apiserver's RequestInfo does: `/api/v1/…` (core) and
 * `/apis/<group>/<version>/…`, then `namespaces/<namespace>/` if any, then
 * `<resource>[/<name>[/<subresource>]]`. The name of a create is not in the path (the caller
 * sets it from the body).
 * @param method HTTP method, upper case
 * @param path URL path without the query
 * @param watch the request's `watch=true` / `watch=1`
 */
export function requestTarget(method: string, path: string, watch: boolean): RequestTarget {
  const parts = path.split('/').filter((part) => part !== '');
  let rest: string[] | undefined;
  if (parts[0] === 'api' && parts.length >= 2) rest = parts.slice(2);
  if (parts[0] === 'apis' && parts.length >= 3) rest = parts.slice(3);
  if (rest === undefined || rest.length === 0) return { verb: method.toLowerCase() };
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1];
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2] ?? '')) rest = rest.slice(2);
  }
  const [resource = '', name, ...subresource] = rest;
  const target: RequestTarget = {
    verb: verbOf(method, name !== undefined, watch),
    resource: subresource.length > 0 ? `${resource}/${subresource.join('/')}` : resource,
  };
  if (namespace !== undefined) target.namespace = namespace;
  if (name !== undefined) target.name = name;
  return target;
}

function verbOf(method: string, named: boolean, watch: boolean): string {
  switch (method) {
    case 'GET':
      return named ? 'get' : watch ? 'watch' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}

/** A place in the request log (`SimulatedCluster.requestMark()`): what came after it is new. */
export interface RequestMark {
  /** How many requests the log held when the mark was taken. */
  readonly logged: number;
}

/**
 * Which requests of the log to return. Every field is optional and every field given must
 * match; a field that takes a list matches any of its values. `{}` matches every request.
 */
export interface RequestQuery {
  /** e.g. `'delete'`, or `['list', 'watch']` for every read of a collection. */
  verb?: RequestVerb | readonly RequestVerb[];
  /**
   * e.g. `'pods'`, or `['pods', 'events']`; a subresource as `pods/status` (so `'pods'` matches
   * no request to a subresource). A query with a resource matches no non-resource request.
   */
  resource?: string | readonly string[];
  /** The path's namespace, e.g. `'sandboxes'` (a cluster-wide request has none). */
  namespace?: string;
  /** The object's name (a create's: its body's `metadata.name`), or any of several. */
  name?: string | readonly string[];
  /** The HTTP status sent, e.g. 201; 0 for a request not answered yet. */
  status?: number;
  /** Arrived at or after this time, epoch ms (`at >= since`). */
  since?: number;
  /** Arrived after this mark was taken. */
  after?: RequestMark;
}

/** Whether `value` is `wanted` or one of the list `wanted`; an absent `wanted` matches anything. */
function oneOf<T>(value: T, wanted: T | readonly T[] | undefined): boolean {
  if (wanted === undefined) return true;
  return Array.isArray(wanted) ? (wanted as readonly T[]).includes(value) : value === wanted;
}

/**
 * The requests of `log` that match `query`, in arrival order (a new array; the records are the
 * log's own, so a status sent later shows on them).
 */
export function requestsWhere(
  log: readonly RecordedRequest[],
  query: RequestQuery,
): RecordedRequest[] {
  return log
    .slice(query.after?.logged ?? 0)
    .filter(
      (request) =>
        oneOf<string>(request.verb, query.verb) &&
        (query.resource === undefined ||
          (request.resource !== undefined && oneOf<string>(request.resource, query.resource))) &&
        (query.namespace === undefined || request.namespace === query.namespace) &&
        (query.name === undefined ||
          (request.name !== undefined && oneOf<string>(request.name, query.name))) &&
        (query.status === undefined || request.status === query.status) &&
        (query.since === undefined || request.at >= query.since),
    );
}
