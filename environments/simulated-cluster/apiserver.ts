/**
 * The simulated apiserver's request handling: routes for discovery, pods and events
 * (create, get, list, delete, watch; events also created through events.k8s.io/v1) with the apiserver's paths, query parameters, status
 * codes and Status bodies, scripted faults applied first, and every request recorded.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { apiGroupList, apiVersions, coreV1Resources, versionInfo } from './discovery.js';
import { coreEventFromV1, eventsV1Namespace, v1EventFromCore } from './events-v1.js';
import type { Faults } from './faults.js';
import { combine, parseFieldSelector, parseLabelSelector } from './selectors.js';
import {
  ApiError,
  badRequest,
  faultStatus,
  limitRangeForbidden,
  preconditionFailed,
  quotaForbidden,
  status as makeStatus,
  type Status,
} from './status.js';
import { requestTarget, type RecordedRequest } from './request-log.js';
import type { KubeObject, ObjectStore, WatchedResource } from './store.js';
import { includeObject, toTable, wantsTable } from './table.js';
import type { WatchRegistry } from './watch.js';

/** What the request handler works on. */
export interface ApiServerContext {
  store: ObjectStore;
  watches: WatchRegistry;
  faults: Faults;
  requests: RecordedRequest[];
  /** `host:port` the server listens on, for discovery. */
  serverAddress: () => string;
  /** Resolves after `ms` (tracked, so closing the cluster cancels it). */
  sleep: (ms: number) => Promise<void>;
  /** True once the cluster is closing: new requests are dropped. */
  closed: () => boolean;
}

const RESOURCES: ReadonlySet<string> = new Set<WatchedResource>(['pods', 'events']);
const KINDS: Record<WatchedResource, string> = { pods: 'Pod', events: 'Event' };

/** A parsed request to a pods or events path. */
interface ResourceRoute {
  resource: WatchedResource;
  /** undefined: cluster-wide (`/api/v1/pods`) */
  namespace?: string;
  name?: string;
}

/** The route of a resource path, or undefined for any other path. */
function resourceRoute(segments: string[]): ResourceRoute | undefined {
  if (segments[0] !== 'api' || segments[1] !== 'v1') return undefined;
  const rest = segments.slice(2);
  if (rest.length === 1 && RESOURCES.has(rest[0] ?? '')) {
    return { resource: rest[0] as WatchedResource };
  }
  if (rest[0] !== 'namespaces' || (rest.length !== 3 && rest.length !== 4)) return undefined;
  if (!RESOURCES.has(rest[2] ?? '')) return undefined;
  return { resource: rest[2] as WatchedResource, namespace: rest[1], name: rest[3] };
}

function notServed(): ApiError {
  return new ApiError(makeStatus(404, 'the server could not find the requested resource'));
}

function methodNotAllowed(): ApiError {
  return new ApiError(
    makeStatus(405, 'the server does not allow this method on the requested resource'),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(text: string): Record<string, unknown> | undefined {
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw badRequest(`the body of the request was in an unknown format: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badRequest('the body of the request must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function parseVersion(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const version = Number(raw);
  if (!Number.isInteger(version) || version < 0) {
    throw badRequest(`invalid resource version: "${raw}"`);
  }
  return version;
}

/** Builds the `(req, res)` handler of the simulated apiserver. */
export function createRequestHandler(
  ctx: ApiServerContext,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void handle(ctx, req, res);
  };
}

async function handle(ctx: ApiServerContext, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://simulated');
  const query = Object.fromEntries(url.searchParams);
  const method = (req.method ?? 'GET').toUpperCase();
  const watch = query.watch === 'true' || query.watch === '1';
  const record: RecordedRequest = {
    method,
    path: url.pathname,
    query,
    at: Date.now(),
    status: 0,
    watch,
    ...requestTarget(method, url.pathname, watch),
  };
  ctx.requests.push(record);
  const send = (code: number, body: unknown, headers: Record<string, string> = {}) => {
    record.status = code;
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const sendStatus = (status: Status) => {
    const retry = status.details?.retryAfterSeconds;
    send(status.code, status, retry === undefined ? {} : { 'Retry-After': String(retry) });
  };
  try {
    const body =
      method === 'POST' || method === 'PUT' || method === 'DELETE' ? await readBody(req) : '';
    if ((method === 'POST' || method === 'PUT') && body) record.bodyName = nameInBody(body);
    if (record.verb === 'create' && record.bodyName) record.name ??= record.bodyName;
    if (method === 'DELETE' && body) {
      try {
        record.deleteOptions = JSON.parse(body) as unknown;
      } catch {
        // recorded as sent: not JSON
      }
    }
    const delay = ctx.faults.responseDelayMs;
    if (delay > 0) await ctx.sleep(delay);
    if (ctx.closed()) {
      res.destroy();
      return;
    }
    if (ctx.faults.rejectingCredentials) {
      sendStatus(faultStatus(401, '', '', undefined));
      return;
    }
    const segments = url.pathname.split('/').filter((s) => s !== '');
    if (method === 'POST' && segments.join('/') === SELF_SUBJECT_ACCESS_REVIEWS) {
      if (ctx.faults.accessReviewsUnserved) throw notServed();
      send(201, accessReview(ctx.faults, parseJson(body)));
      return;
    }
    if (method === 'POST' && segments.join('/') === SELF_SUBJECT_REVIEWS) {
      send(201, selfReview());
      return;
    }
    const eventsNamespace = eventsV1Namespace(segments);
    if (eventsNamespace !== undefined) {
      // events.k8s.io/v1: create only, stored as the core Event (simulated-cluster/events-v1.ts).
      if (method !== 'POST') throw methodNotAllowed();
      if (ctx.faults.isDenied('create', 'events')) {
        sendStatus(faultStatus(403, 'create', 'events', eventsNamespace));
        return;
      }
      const stored = ctx.store.create('events', coreEventFromV1(eventsNamespace, parseJson(body)));
      send(201, v1EventFromCore(stored));
      return;
    }
    const route = resourceRoute(segments);
    if (!route) {
      if (method !== 'GET') throw notServed();
      sendDiscovery(ctx, segments.join('/'), send, res, record);
      return;
    }
    const verb = verbOf(method, route, record.watch);
    const fault = record.watch
      ? ctx.faults.takeWatchFailure(route.resource)
      : ctx.faults.takeRequestFailure(method, route.resource);
    if (fault !== undefined) {
      const name = route.name ?? nameInBody(body);
      sendStatus(faultStatus(fault, verb, route.resource, route.namespace, name));
      return;
    }
    if (ctx.faults.isDenied(verb, route.resource)) {
      sendStatus(faultStatus(403, verb, route.resource, route.namespace));
      return;
    }
    const table = wantsTable(req.headers.accept);
    const include = includeObject(query.includeObject);
    const encode = (object: KubeObject, version?: string) =>
      table ? toTable(route.resource, [object], include, version) : object;
    switch (verb) {
      case 'watch': {
        const selector = combine(
          parseFieldSelector(query.fieldSelector, route.resource),
          parseLabelSelector(query.labelSelector),
        );
        const timeout =
          query.timeoutSeconds === undefined ? undefined : Number(query.timeoutSeconds);
        record.status = 200;
        ctx.watches.open(res, {
          resource: route.resource,
          namespace: route.namespace,
          selector,
          resourceVersion: parseVersion(query.resourceVersion),
          timeoutSeconds: timeout !== undefined && Number.isFinite(timeout) ? timeout : undefined,
          silent: ctx.faults.isSilenced(route.resource),
          bookmarks: query.allowWatchBookmarks === 'true' || query.allowWatchBookmarks === '1',
          encode: (object) => encode(object),
        });
        return;
      }
      case 'list': {
        const selector = combine(
          parseFieldSelector(query.fieldSelector, route.resource),
          parseLabelSelector(query.labelSelector),
        );
        const items = ctx.store
          .list(route.resource, route.namespace)
          .filter((object) => selector.matches(object));
        const version = String(ctx.store.currentVersion);
        send(
          200,
          table
            ? toTable(route.resource, items, include, version)
            : {
                kind: `${KINDS[route.resource]}List`,
                apiVersion: 'v1',
                metadata: { resourceVersion: version },
                items,
              },
        );
        return;
      }
      case 'get':
        send(200, encode(ctx.store.get(route.resource, route.namespace ?? '', route.name ?? '')));
        return;
      case 'create':
        send(201, create(ctx.store, route, parseJson(body), ctx.faults));
        return;
      case 'delete':
        send(200, remove(ctx.store, route, parseJson(body)));
        return;
      case 'replace':
        send(200, replaceEvent(ctx.store, route, parseJson(body)));
        return;
      case 'update':
        send(200, updatePodMetadata(ctx.store, route, parseJson(body)));
        return;
    }
  } catch (err) {
    if (err instanceof ApiError) sendStatus(err.status);
    else sendStatus(makeStatus(500, `Internal error occurred: ${(err as Error).message}`));
  }
}

/** Path of `authorization.k8s.io/v1` SelfSubjectAccessReviews (without the leading slash). */
const SELF_SUBJECT_ACCESS_REVIEWS = 'apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

/** Path of `authentication.k8s.io/v1` SelfSubjectReviews ("who am I", `kubectl auth whoami`). */
const SELF_SUBJECT_REVIEWS = 'apis/authentication.k8s.io/v1/selfsubjectreviews';

/** Answers a SelfSubjectReview: the simulated cluster has one user, whose credentials it accepts. */
function selfReview(): unknown {
  return {
    kind: 'SelfSubjectReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: {},
    status: { userInfo: { username: 'simulated', groups: ['system:authenticated'] } },
  };
}

/**
 * Answers a SelfSubjectAccessReview: allowed unless the fault script denies the verb on the
 * resource (`faults.deny`). Only `spec.resourceAttributes` is read.
 * @throws ApiError 400 without a body
 */
function accessReview(faults: Faults, body: Record<string, unknown> | undefined): unknown {
  if (!body) throw badRequest('the body of the request is required');
  const spec = (body.spec ?? {}) as { resourceAttributes?: { verb?: string; resource?: string } };
  const { verb = '', resource = '' } = spec.resourceAttributes ?? {};
  const allowed = !faults.isDenied(verb, resource);
  return {
    kind: 'SelfSubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: {},
    spec,
    status: allowed
      ? { allowed: true, reason: 'RBAC: allowed by the simulated cluster' }
      : { allowed: false },
  };
}

/** `metadata.name` of a JSON request body, or ''. */
function nameInBody(body: string): string {
  try {
    const name = (JSON.parse(body) as { metadata?: { name?: unknown } }).metadata?.name;
    return typeof name === 'string' ? name : '';
  } catch {
    return '';
  }
}

/** MiB of a quantity in Mi or Gi (`3000Mi`, `2Gi`); NaN for other units. */
function mebibytes(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) return NaN;
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

/**
 * The admission rules the fault script set (LimitRange- and ResourceQuota-like), applied to a
 * new pod in the order kube-apiserver's admission chain has them (LimitRanger, then
 * ResourceQuota).
 * @throws ApiError 403 Forbidden worded as the admission plugin words it
 */
function admitPod(
  store: ObjectStore,
  faults: Faults,
  namespace: string,
  name: string,
  body: Record<string, unknown>,
): void {
  const max = faults.ephemeralStorageMax;
  if (max !== null) {
    const containers =
      (body.spec as { containers?: Array<{ resources?: { limits?: Record<string, string> } }> })
        ?.containers ?? [];
    for (const container of containers) {
      const limit = container.resources?.limits?.['ephemeral-storage'];
      if (limit !== undefined && mebibytes(limit) > mebibytes(max)) {
        throw limitRangeForbidden(name, 'ephemeral-storage', max, limit);
      }
    }
  }
  const quota = faults.podQuotaRule;
  if (quota !== null) {
    const used = store.list('pods', namespace).length;
    if (used + 1 > quota.pods) throw quotaForbidden(name, quota.name, used, quota.pods);
  }
}

type Verb = 'watch' | 'list' | 'get' | 'create' | 'delete' | 'replace' | 'update';

/**
 * The Kubernetes verb of a request to a resource path.
 * @throws ApiError 405 for a method the resource does not allow there
 */
function verbOf(method: string, route: ResourceRoute, watch: boolean): Verb {
  const collection = route.name === undefined;
  if (method === 'GET') return collection ? (watch ? 'watch' : 'list') : 'get';
  if (method === 'POST' && collection && route.namespace !== undefined) return 'create';
  if (method === 'DELETE' && !collection && route.resource === 'pods') return 'delete';
  if (method === 'PUT' && !collection && route.resource === 'events') return 'replace';
  if (method === 'PUT' && !collection && route.resource === 'pods') return 'update';
  throw methodNotAllowed();
}

function sendDiscovery(
  ctx: ApiServerContext,
  path: string,
  send: (code: number, body: unknown) => void,
  res: ServerResponse,
  record: RecordedRequest,
): void {
  switch (path) {
    case 'api':
      return send(200, apiVersions(ctx.serverAddress()));
    case 'apis':
      return send(200, apiGroupList());
    case 'api/v1':
      return send(200, coreV1Resources());
    case 'version':
      return send(200, versionInfo());
    case 'healthz':
    case 'livez':
    case 'readyz':
      record.status = 200;
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return;
    default:
      throw notServed();
  }
}

/**
 * Creates a pod or event from a request body: namespace from the path (a different one in the
 * body is a 400), uid, resourceVersion and creationTimestamp assigned; pods start Pending.
 * @throws ApiError 400 without a body, 422 without metadata.name, 409 AlreadyExists
 */
function create(
  store: ObjectStore,
  route: ResourceRoute,
  body: Record<string, unknown> | undefined,
  faults: Faults,
): KubeObject {
  if (!body) throw badRequest('the body of the request is required');
  const namespace = route.namespace ?? '';
  const metadata = { ...((body.metadata as Record<string, unknown> | undefined) ?? {}) };
  if (metadata.namespace !== undefined && metadata.namespace !== namespace) {
    throw badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  }
  const kind = KINDS[route.resource];
  if (typeof metadata.name !== 'string' || metadata.name === '') {
    throw new ApiError(
      makeStatus(
        422,
        `${kind} "" is invalid: metadata.name: Required value: name or generateName is required`,
        { kind: route.resource },
      ),
    );
  }
  const { apiVersion: _apiVersion, kind: _kind, metadata: _metadata, ...rest } = body;
  const object: KubeObject = {
    apiVersion: 'v1',
    kind,
    metadata: {
      ...metadata,
      name: metadata.name,
      namespace,
      uid: '',
      resourceVersion: '',
      creationTimestamp: '',
    },
    ...rest,
  };
  if (route.resource === 'pods') {
    admitPod(store, faults, namespace, metadata.name, body);
    object.spec = body.spec ?? {};
    object.status = { phase: 'Pending' };
  }
  return store.create(route.resource, object);
}

/**
 * Replaces an event (kubelet's recorder updates events to bump their count): everything but
 * name, namespace and uid comes from the body; emits MODIFIED with a new resourceVersion.
 * @throws ApiError 400 without a body, 404 NotFound
 */
function replaceEvent(
  store: ObjectStore,
  route: ResourceRoute,
  body: Record<string, unknown> | undefined,
): KubeObject {
  if (!body) throw badRequest('the body of the request is required');
  const { metadata: _metadata, apiVersion: _apiVersion, kind: _kind, ...rest } = body;
  return store.update(route.resource, route.namespace ?? '', route.name ?? '', (event) => {
    for (const key of Object.keys(event)) if (key !== 'metadata') delete event[key];
    Object.assign(event, { apiVersion: 'v1', kind: 'Event', ...rest });
  });
}

/**
 * Updates a pod (PUT) as far as the service uses it: its labels and annotations come from the
 * body; spec and status stay as stored (the apiserver ignores status on an update of the main
 * resource, and the service changes no spec field). Optimistic concurrency as on the apiserver:
 * a body whose `metadata.resourceVersion` is set and not the current one answers 409 Conflict
 * ("the object has been modified"); unset, the update is unconditional. Emits MODIFIED.
 * @throws ApiError 400 without a body, 404 NotFound, 409 Conflict
 */
function updatePodMetadata(
  store: ObjectStore,
  route: ResourceRoute,
  body: Record<string, unknown> | undefined,
): KubeObject {
  if (!body) throw badRequest('the body of the request is required');
  const namespace = route.namespace ?? '';
  const name = route.name ?? '';
  const metadata = (body.metadata ?? {}) as {
    resourceVersion?: unknown;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  const current = store.get(route.resource, namespace, name);
  if (
    typeof metadata.resourceVersion === 'string' &&
    metadata.resourceVersion !== '' &&
    metadata.resourceVersion !== current.metadata.resourceVersion
  ) {
    throw preconditionFailed(
      'pods',
      name,
      'the object has been modified; please apply your changes to the latest version and try again',
    );
  }
  return store.update(route.resource, namespace, name, (pod) => {
    pod.metadata.labels = { ...(metadata.labels ?? {}) };
    pod.metadata.annotations = { ...(metadata.annotations ?? {}) };
  });
}

/**
 * Deletes a pod at once (no graceful termination), honouring DeleteOptions preconditions.
 * @throws ApiError 404 NotFound, 409 Conflict when a precondition fails
 */
function remove(
  store: ObjectStore,
  route: ResourceRoute,
  options: Record<string, unknown> | undefined,
): KubeObject {
  const namespace = route.namespace ?? '';
  const name = route.name ?? '';
  const current = store.get(route.resource, namespace, name);
  const preconditions = (options?.preconditions ?? {}) as {
    uid?: unknown;
    resourceVersion?: unknown;
  };
  if (typeof preconditions.uid === 'string' && preconditions.uid !== current.metadata.uid) {
    throw preconditionFailed(
      KINDS[route.resource],
      name,
      `the UID in the precondition (${preconditions.uid}) does not match the UID in record ` +
        `(${current.metadata.uid}). The object might have been deleted and then recreated`,
    );
  }
  if (
    typeof preconditions.resourceVersion === 'string' &&
    preconditions.resourceVersion !== current.metadata.resourceVersion
  ) {
    throw preconditionFailed(
      KINDS[route.resource],
      name,
      `the ResourceVersion in the precondition (${preconditions.resourceVersion}) does not match ` +
        `the ResourceVersion in record (${current.metadata.resourceVersion}). The object might ` +
        'have been modified',
    );
  }
  return store.delete(route.resource, namespace, name);
}
