/**
 * The typed client of the durable-sandbox API: openapi-fetch over the types openapi-typescript
 * generated from the OpenAPI document (./schema.ts), with bearer auth, an idempotency key for
 * every create (one per logical request, the same on each retry of it), retries of what is safe
 * to repeat (./retry.ts), typed errors (./errors.ts) and the long-poll wait (./wait.ts).
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import type { DebugPaths, TraceSpan } from './debug-paths.js';
import { DurableSandboxError, RequestAbortedError, errorOfAnswer } from './errors.js';
import {
  DEFAULT_RETRY_POLICY,
  isRetryable,
  retryDelayMs,
  type RepeatableRequest,
  type RetryPolicy,
} from './retry.js';
import type { paths } from './schema.js';
import type {
  CreateSandboxRequest,
  Event,
  EventPage,
  WebhookEventType,
  ExtendSandboxRequest,
  Operation,
  OperationPage,
  OperationStatus,
  OperationType,
  Quota,
  Sandbox,
  SandboxPage,
  SandboxState,
  Template,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookRecovery,
  CreateWebhookEndpointRequest,
} from './types.js';
import {
  pause,
  waitForOperation,
  type OperationAnswer,
  type SeenOperation,
  type WaitOptions,
} from './wait.js';

/** Where the API is, who calls it, and how patiently. */
export interface ClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A tenant's bearer token (API_TOKENS) or a JWT; sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Default: the global fetch. Receives a `Request`. */
  fetch?: (request: Request) => Promise<Response>;
  /** Aborts every call in flight and every later one; they throw {@link RequestAbortedError}. */
  signal?: AbortSignal;
  /** Default {@link DEFAULT_RETRY_POLICY}; `{ attempts: 1, … }` turns retries off. */
  retry?: RetryPolicy;
}

/** Options of one call. */
export interface CallOptions {
  /** Stops this call (and its retries); it throws {@link RequestAbortedError}. */
  signal?: AbortSignal;
}

/** Options of a create. */
export interface CreateOptions extends CallOptions {
  /**
   * The create's `Idempotency-Key`: the API answers a repeat of the same key and body with the
   * first create's operation (docs/api.md). Default: a new UUID for this call, reused by its
   * retries. Pass your own to make a create safe to repeat across processes.
   */
  idempotencyKey?: string;
}

/** A page request of a list. */
export interface PageQuery {
  /** 1 to 200; the API's default is 50. */
  limit?: number;
  /** `next_page_token` of the previous page (same filter). */
  pageToken?: string;
}

/** Which events to read (`GET /v1/events`). */
export interface EventQuery {
  /** `next_cursor` of an earlier page (of the same filter); absent: from the oldest kept event. */
  after?: string;
  /** Only these types. */
  types?: WebhookEventType[];
  /** Only this sandbox's events. */
  sandbox?: string;
  /** 1 to 500; the API's default is 100. */
  limit?: number;
}

/** What one try gives to the request it makes. */
interface Try {
  signal: AbortSignal | undefined;
  fetch: (request: Request) => Promise<Response>;
}

/** What openapi-fetch answers. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The paths the client calls: the document's and the debug route. */
type ClientPaths = paths & DebugPaths;

/**
 * A new idempotency key: a random UUID (RFC 9562 version 4), as the IETF draft
 * "The Idempotency-Key HTTP Header Field" recommends.
 */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}

/** Calls the durable-sandbox API. Every method throws {@link DurableSandboxError} for an error answer. */
export class DurableSandboxClient {
  /**
   * The openapi-fetch client underneath (bearer auth set), for a route this class has no method
   * for; its answers are `{ data, error, response }` and it neither retries nor throws.
   */
  readonly raw: Client<ClientPaths>;
  private readonly baseUrl: string;
  private readonly fetchImpl: (request: Request) => Promise<Response>;
  private readonly retry: RetryPolicy;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((request) => fetch(request));
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    this.raw = createFetchClient<ClientPaths>({
      baseUrl: this.baseUrl,
      fetch: this.fetchImpl,
      headers: { Authorization: `Bearer ${options.token}`, Accept: 'application/json' },
    });
  }

  /**
   * Starts a create (`POST /v1/sandboxes`): 202 with the operation; follow it with
   * {@link waitForOperation}. Retried under the same idempotency key when no answer came
   * (./retry.ts).
   * @throws DurableSandboxError `invalid_request` (the body), `idempotency_conflict` (the key was
   *   used with another body), `unavailable`, …
   */
  createSandbox(request: CreateSandboxRequest, options: CreateOptions = {}): Promise<Operation> {
    const key = options.idempotencyKey ?? newIdempotencyKey();
    return this.send('POST /v1/sandboxes', options, 'create', ({ signal, fetch }) =>
      this.raw.POST('/v1/sandboxes', {
        body: request,
        params: { header: { 'Idempotency-Key': key } },
        signal,
        fetch,
      }),
    ).then(({ data }) => data);
  }

  /**
   * Creates and waits until the create is done (long-poll).
   * @returns the finished operation: `succeeded` with `result.sandbox`, or `failed` / `cancelled`
   *   with `error` (a failed create is returned, not thrown)
   * @throws DurableSandboxError when the create is refused outright or a read fails
   * @throws RequestAbortedError when the signal aborts (the create goes on)
   */
  async createSandboxAndWait(
    request: CreateSandboxRequest,
    options: CreateOptions & WaitOptions = {},
  ): Promise<Operation> {
    const operation = await this.createSandbox(request, options);
    return this.waitForOperation(operation.id, options);
  }

  /**
   * The synchronous create (`POST /sync/v1/sandboxes`): answers when the sandbox runs or failed.
   * @returns the running sandbox
   * @throws DurableSandboxError with the create's failure: `invalid_request` (400, the node's
   *   reason), `quota_exceeded` (429), `pod_never_ready`, `no_node_available` (503), …; its
   *   `details.operation_id` names the operation behind it
   */
  createSandboxSync(request: CreateSandboxRequest, options: CreateOptions = {}): Promise<Sandbox> {
    const key = options.idempotencyKey ?? newIdempotencyKey();
    return this.send('POST /sync/v1/sandboxes', options, 'create', ({ signal, fetch }) =>
      this.raw.POST('/sync/v1/sandboxes', {
        body: request,
        params: { header: { 'Idempotency-Key': key } },
        signal,
        fetch,
      }),
    ).then(({ data }) => data);
  }

  /**
   * One read of an operation (`GET /v1/operations/{id}`).
   * @param options.waitS long-poll: answer at the next change or after this many seconds
   */
  async getOperation(
    id: string,
    options: CallOptions & { waitS?: number } = {},
  ): Promise<Operation> {
    return (await this.readOperation(id, options)).operation;
  }

  /**
   * Waits until the operation is done, one long-poll at a time (./wait.ts).
   * @returns the finished operation, whatever its status
   * @throws DurableSandboxError when a read is refused (e.g. 404) or the API cannot be reached
   * @throws RequestAbortedError when the signal aborts (the operation goes on)
   */
  waitForOperation(id: string, options: WaitOptions = {}): Promise<Operation> {
    return waitForOperation(
      (waitS, seen) => this.readOperation(id, { waitS, seen, signal: options.signal }),
      options,
    );
  }

  /**
   * Cancels a running create (`POST /v1/operations/{id}/cancel`): it compensates and ends
   * `cancelled`. Not retried (a repeat of a cancel that took effect answers `already_done`).
   * @throws DurableSandboxError `already_done` once the operation has finished
   */
  async cancelOperation(id: string, options: CallOptions = {}): Promise<Operation> {
    const what = 'POST /v1/operations/{id}/cancel';
    return (
      await this.send(what, options, false, ({ signal, fetch }) =>
        this.raw.POST('/v1/operations/{id}/cancel', { params: { path: { id } }, signal, fetch }),
      )
    ).data;
  }

  /**
   * Deletes a sandbox (`DELETE /v1/sandboxes/{id}`): 202 with the delete's operation. Not
   * retried (a repeat of a delete that took effect answers `already_done`).
   * @throws DurableSandboxError `already_done` when the sandbox is already deleted, `not_found`
   */
  async deleteSandbox(id: string, options: CallOptions = {}): Promise<Operation> {
    return (
      await this.send('DELETE /v1/sandboxes/{id}', options, false, ({ signal, fetch }) =>
        this.raw.DELETE('/v1/sandboxes/{id}', { params: { path: { id } }, signal, fetch }),
      )
    ).data;
  }

  /**
   * Sets a running sandbox's lifetime (`POST /v1/sandboxes/{id}:extend`): `{ ttl: "3600s" }`
   * from now, or `{ expire_time }`. Retried on transient errors (the same `expire_time` is
   * idempotent; a `ttl` counts from the attempt that lands).
   * @returns the sandbox with its new `expire_time`
   * @throws DurableSandboxError `not_running`, `invalid_request` (past the template's
   *   `max_ttl`), `not_found`
   */
  async extendSandbox(
    id: string,
    request: ExtendSandboxRequest,
    options: CallOptions = {},
  ): Promise<Sandbox> {
    return (
      await this.send('POST /v1/sandboxes/{id}:extend', options, 'read', ({ signal, fetch }) =>
        this.raw.POST('/v1/sandboxes/{id}:extend', {
          params: { path: { id } },
          body: request,
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /** A sandbox (`GET /v1/sandboxes/{id}`). @throws DurableSandboxError `not_found` */
  async getSandbox(id: string, options: CallOptions = {}): Promise<Sandbox> {
    return (
      await this.send('GET /v1/sandboxes/{id}', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/sandboxes/{id}', { params: { path: { id } }, signal, fetch }),
      )
    ).data;
  }

  /**
   * A page of the tenant's sandboxes that match the filter, newest first (`GET /v1/sandboxes`):
   * `state` one or several, `template`, `labelSelector` (Kubernetes' syntax, e.g.
   * `team=a,env in (prod,dev)`), `createTimeAfter` (inclusive) and `createTimeBefore`
   * (exclusive), RFC 3339. Send the next page with the same filter.
   * @throws DurableSandboxError `invalid_request` for a malformed selector (its `details`
   *   name the position) or a page token of another filter
   */
  async listSandboxes(
    query: PageQuery & {
      state?: SandboxState | SandboxState[];
      template?: string;
      labelSelector?: string;
      createTimeAfter?: string;
      createTimeBefore?: string;
    } = {},
    options: CallOptions = {},
  ): Promise<SandboxPage> {
    const { limit, pageToken: page_token, template } = query;
    const state = query.state === undefined ? undefined : [query.state].flat();
    return (
      await this.send('GET /v1/sandboxes', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/sandboxes', {
          params: {
            query: {
              state,
              template,
              label_selector: query.labelSelector,
              create_time_after: query.createTimeAfter,
              create_time_before: query.createTimeBefore,
              limit,
              page_token,
            },
          },
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /**
   * Changes a sandbox's labels (`PATCH /v1/sandboxes/{id}`, AIP-134), in any state. Without
   * `keys` its labels become `labels`; with `keys`, each key is set from `labels`, or removed
   * when `labels` has none (the others stay). Idempotent, so retried like a read.
   * @returns the sandbox with its new labels
   * @throws DurableSandboxError `invalid_request` (a bad label, or more than 64), `not_found`
   */
  async updateSandboxLabels(
    id: string,
    labels: Record<string, string>,
    change: { keys?: readonly string[] } & CallOptions = {},
  ): Promise<Sandbox> {
    const update_mask =
      change.keys === undefined
        ? 'labels'
        : change.keys.map((key) => `labels.\`${key}\``).join(',');
    return (
      await this.send('PATCH /v1/sandboxes/{id}', change, 'read', ({ signal, fetch }) =>
        this.raw.PATCH('/v1/sandboxes/{id}', {
          params: { path: { id }, query: { update_mask } },
          body: { labels },
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /**
   * A page of the tenant's operations that match the filter, newest first (`GET
   * /v1/operations`): `status` and `type` one or several, `sandboxId`, `createTimeAfter`
   * (inclusive) and `createTimeBefore` (exclusive), RFC 3339.
   */
  async listOperations(
    query: PageQuery & {
      status?: OperationStatus | OperationStatus[];
      type?: OperationType | OperationType[];
      sandboxId?: string;
      createTimeAfter?: string;
      createTimeBefore?: string;
    } = {},
    options: CallOptions = {},
  ): Promise<OperationPage> {
    const { limit, pageToken: page_token } = query;
    const status = query.status === undefined ? undefined : [query.status].flat();
    const type = query.type === undefined ? undefined : [query.type].flat();
    return (
      await this.send('GET /v1/operations', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/operations', {
          params: {
            query: {
              status,
              type,
              sandbox_id: query.sandboxId,
              create_time_after: query.createTimeAfter,
              create_time_before: query.createTimeBefore,
              limit,
              page_token,
            },
          },
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /**
   * A page of the tenant's events after a cursor, oldest first (`GET /v1/events`,
   * docs/webhooks.md, "The event feed"): the events webhooks carry, with the same ids and bodies.
   * @param options.waitS long-poll: when none is past the cursor, answer as soon as one is, or
   *   with an empty page after this many seconds (at most 60)
   * @throws DurableSandboxError `invalid_request` for a cursor of another tenant or filter
   */
  async listEvents(
    query: EventQuery = {},
    options: CallOptions & { waitS?: number } = {},
  ): Promise<EventPage> {
    const wait = options.waitS === undefined ? undefined : `${options.waitS}s`;
    const { after, types, sandbox, limit } = query;
    return (
      await this.send('GET /v1/events', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/events', {
          params: { query: { after, type: types, sandbox, limit, wait } },
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /**
   * Follows the tenant's events from `query.after` (default: the oldest kept), one long-poll
   * at a time, yielding each event once, in order, for as long as the caller iterates; ends
   * (without throwing) when `options.signal` aborts. `break` out of the loop to stop.
   * @param options.waitS each long-poll's wait in seconds (default 30, at most 60)
   * @throws DurableSandboxError when a read is refused, or the API stays unreachable through
   *   the retries (./retry.ts)
   */
  async *followEvents(
    query: EventQuery = {},
    options: CallOptions & { waitS?: number } = {},
  ): AsyncGenerator<Event, void, undefined> {
    const waitS = options.waitS ?? 30;
    let after = query.after;
    for (;;) {
      let page: EventPage;
      try {
        page = await this.listEvents({ ...query, after }, { signal: options.signal, waitS });
      } catch (err) {
        if (err instanceof RequestAbortedError) return;
        throw err;
      }
      for (const event of page.events) yield event;
      after = page.next_cursor;
    }
  }

  /** The template catalog (`GET /v1/templates`). */
  async listTemplates(options: CallOptions = {}): Promise<Template[]> {
    return (
      await this.send('GET /v1/templates', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/templates', { signal, fetch }),
      )
    ).data.templates;
  }

  /** One template (`GET /v1/templates/{name}`). @throws DurableSandboxError `not_found` */
  async getTemplate(name: string, options: CallOptions = {}): Promise<Template> {
    return (
      await this.send('GET /v1/templates/{name}', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/templates/{name}', { params: { path: { name } }, signal, fetch }),
      )
    ).data;
  }

  /** The tenant's limits and usage (`GET /v1/quota`; docs/api.md, "Tenant limits"). */
  async getQuota(options: CallOptions = {}): Promise<Quota> {
    return (
      await this.send('GET /v1/quota', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/quota', { signal, fetch }),
      )
    ).data;
  }

  /**
   * Registers a webhook endpoint (`POST /v1/webhook-endpoints`; docs/webhooks.md). Not retried
   * (a repeat would register a second endpoint).
   * @returns the endpoint with its signing secret, shown only in this answer
   * @throws DurableSandboxError `invalid_request` naming the field, `quota_exceeded`
   */
  async createWebhookEndpoint(
    request: CreateWebhookEndpointRequest,
    options: CallOptions = {},
  ): Promise<WebhookEndpointWithSecret> {
    return (
      await this.send('POST /v1/webhook-endpoints', options, false, ({ signal, fetch }) =>
        this.raw.POST('/v1/webhook-endpoints', { body: request, signal, fetch }),
      )
    ).data;
  }

  /** The tenant's webhook endpoints, oldest first (`GET /v1/webhook-endpoints`). */
  async listWebhookEndpoints(options: CallOptions = {}): Promise<WebhookEndpoint[]> {
    return (
      await this.send('GET /v1/webhook-endpoints', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/webhook-endpoints', { signal, fetch }),
      )
    ).data.webhook_endpoints;
  }

  /** Deletes a webhook endpoint (`DELETE /v1/webhook-endpoints/{id}`). @throws `not_found` */
  async deleteWebhookEndpoint(id: string, options: CallOptions = {}): Promise<void> {
    const what = 'DELETE /v1/webhook-endpoints/{id}';
    await this.send(what, options, false, ({ signal, fetch }) =>
      this.raw.DELETE('/v1/webhook-endpoints/{id}', { params: { path: { id } }, signal, fetch }),
    );
  }

  /**
   * Replaces an endpoint's signing secret (`POST /v1/webhook-endpoints/{id}/rotate-secret`); the
   * previous one keeps signing beside it for the grace period. Not retried.
   * @returns the endpoint with its new secret, shown only in this answer
   */
  async rotateWebhookSecret(
    id: string,
    options: CallOptions = {},
  ): Promise<WebhookEndpointWithSecret> {
    const what = 'POST /v1/webhook-endpoints/{id}/rotate-secret';
    return (
      await this.send(what, options, false, ({ signal, fetch }) =>
        this.raw.POST('/v1/webhook-endpoints/{id}/rotate-secret', {
          params: { path: { id } },
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /**
   * Sends again the endpoint's events emitted since `since` (RFC 3339, within the last 7 days)
   * that were refused, given up, or queued and not taken yet
   * (`POST /v1/webhook-endpoints/{id}:recover`; docs/webhooks.md). Retried on transient errors:
   * a repeat queues again only what no delivery has taken, and each event is sent by one
   * delivery at a time.
   * @returns how many events were queued
   * @throws DurableSandboxError `invalid_request` for a bad `since`, `not_found`
   */
  async recoverWebhookEvents(
    id: string,
    since: string,
    options: CallOptions = {},
  ): Promise<WebhookRecovery> {
    const what = 'POST /v1/webhook-endpoints/{id}:recover';
    return (
      await this.send(what, options, 'read', ({ signal, fetch }) =>
        this.raw.POST('/v1/webhook-endpoints/{id}:recover', {
          params: { path: { id } },
          body: { since },
          signal,
          fetch,
        }),
      )
    ).data;
  }

  /** An endpoint's latest delivery attempts, newest first (`GET …/{id}/deliveries`). */
  async listWebhookDeliveries(id: string, options: CallOptions = {}): Promise<WebhookDelivery[]> {
    const what = 'GET /v1/webhook-endpoints/{id}/deliveries';
    return (
      await this.send(what, options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/v1/webhook-endpoints/{id}/deliveries', {
          params: { path: { id } },
          signal,
          fetch,
        }),
      )
    ).data.deliveries;
  }

  /**
   * The spans of a trace `npm start` keeps (`GET /debug/traces/{trace_id}`; ./debug-paths.ts).
   * @throws DurableSandboxError `not_found` when no span of it is kept (or the API serves no
   *   such route: only `npm start` does)
   */
  async getTrace(traceId: string, options: CallOptions = {}): Promise<TraceSpan[]> {
    return (
      await this.send('GET /debug/traces/{trace_id}', options, 'read', ({ signal, fetch }) =>
        this.raw.GET('/debug/traces/{trace_id}', {
          params: { path: { trace_id: traceId } },
          signal,
          fetch,
        }),
      )
    ).data.spans;
  }

  /**
   * One read of an operation with the answer's `Retry-After` and `ETag`, for the wait. With
   * `seen`, sends its tag as `If-None-Match`, and a 304 answers `seen`'s operation (the API
   * answers 304 while the operation is still at that tag: docs/api.md, "Long-poll").
   */
  private async readOperation(
    id: string,
    options: CallOptions & { waitS?: number; seen?: SeenOperation },
  ): Promise<OperationAnswer> {
    const wait = options.waitS === undefined ? undefined : `${options.waitS}s`;
    const seen = options.seen;
    const header = seen?.etag ? { 'If-None-Match': seen.etag } : undefined;
    const { data, response } = await this.send(
      'GET /v1/operations/{id}',
      options,
      'read',
      async ({ signal, fetch }) => {
        const answer = await this.raw.GET('/v1/operations/{id}', {
          params: { path: { id }, query: { wait }, header },
          signal,
          fetch,
        });
        return answer.response.status === 304 && seen
          ? { data: seen.operation, response: answer.response }
          : answer;
      },
    );
    return {
      operation: data,
      retryAfter: response.headers.get('retry-after'),
      etag: response.headers.get('etag'),
    };
  }

  /**
   * Sends one logical request: tries it, turns the answer into its data or a typed error, and
   * tries again under {@link RetryPolicy} when it is `repeatable` and the failure allows it
   * (./retry.ts).
   * @param what the route, e.g. `GET /v1/sandboxes`, for messages
   * @param attempt one try; it must send the same request each time (a create its one key)
   * @throws DurableSandboxError for an error answer (the last try's) or no answer (`unavailable`,
   *   status 0), `internal` for a 2xx answer whose body is not JSON
   * @throws RequestAbortedError when the client's or the call's signal aborts
   */
  private async send<T>(
    what: string,
    options: CallOptions,
    repeatable: RepeatableRequest | false,
    attempt: (t: Try) => Promise<Answer<T>>,
  ): Promise<{ data: T; response: Response }> {
    const signals = [this.options.signal, options.signal].filter((s) => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    for (let tries = 1; ; tries++) {
      if (signal?.aborted) throw new RequestAbortedError(signal.reason);
      let answered: Response | undefined;
      const fetchOnce = async (request: Request) => (answered = await this.fetchImpl(request));
      let error: DurableSandboxError;
      try {
        const { data, error: body, response } = await attempt({ signal, fetch: fetchOnce });
        // A 304 counts when the attempt answered it with what the caller already had.
        if (response.ok || (response.status === 304 && data !== undefined)) {
          return { data: data as T, response };
        }
        error = errorOfAnswer(response, body, what);
      } catch (err) {
        if (signal?.aborted) throw new RequestAbortedError(signal.reason);
        if (answered !== undefined && err instanceof SyntaxError) {
          throw new DurableSandboxError(
            'internal',
            `${what} answered ${answered.status} with a body that is not JSON`,
            answered.status,
          );
        }
        const cause = (err as { cause?: { message?: string } }).cause?.message;
        const reason = cause ?? (err as Error).message;
        error = new DurableSandboxError(
          'unavailable',
          answered === undefined
            ? `cannot reach ${this.baseUrl}: ${reason}`
            : `${what}: the answer broke off: ${reason}`,
          0,
        );
      }
      if (!repeatable || tries >= this.retry.attempts || !isRetryable(error, repeatable)) {
        throw error;
      }
      await pause(retryDelayMs(this.retry, tries, error), signal);
    }
  }
}
