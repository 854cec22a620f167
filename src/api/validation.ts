/**
 * Request validation with zod (docs/api.md): strict objects, so unknown fields are
 * rejected, and messages that name the field (`resources.disk_mib must be a positive integer`).
 * Everything here throws {@link ApiError} `invalid_request` (400) before any workflow starts.
 */
import { z } from 'zod';
import { lifetimeOf, type TemplateConfig } from '../config/index.js';
import {
  LabelSelectorError,
  OPERATION_STATUSES,
  OPERATION_TYPES,
  PAGE_SIZE,
  SANDBOX_ID,
  parseLabelSelector,
  parseLabels,
  labelKeyErrors,
  type LabelSelector,
  type OperationStatus,
  type OperationType,
  type SandboxState,
  RESOURCE_LIMITS,
  SANDBOX_STATES,
  MAX_TTL_LIMIT_MS,
  coresOf,
  formatDuration,
  parseDurationMs,
  parseCpuQuantity,
  resourcesFromWire,
  type SandboxResources,
  type WebhookEventType,
  WEBHOOK_EVENT_TYPES,
} from '../../contract/index.js';
import { ApiError } from './errors.js';
import { MAX_WAIT_MS, parseWait } from './long-poll.js';

/** A validated create request, in the contract's spelling. */
export interface CreateRequest {
  template: string;
  resources: SandboxResources;
  /**
   * The sandbox's lifetime in ms, counted from running: the request's `ttl`, else the
   * template's `default_ttl`; undefined: no expiry (docs/api.md, "Lifetimes"). `from` says
   * which (only the request's is part of its idempotency hash).
   */
  lifetime?: { ttlMs: number; from: 'request' | 'template' };
  /** The sandbox's labels (docs/api.md, "Labels and filters"); absent or {}: none. */
  labels?: Record<string, string>;
}

/** A size in MiB: a JSON integer from 1 to `max` (a quantity string such as "1Gi" is refused). */
function positiveInteger(max: number) {
  const message = 'must be a positive integer';
  return z
    .number({
      error: (issue) =>
        issue.input === undefined
          ? 'is required'
          : typeof issue.input === 'string'
            ? `${message} of MiB, a JSON number (1024, not "1Gi")`
            : message,
    })
    .int({ error: message })
    .min(1, { error: message })
    .max(max, { error: `must be at most ${max}` });
}

/**
 * `resources.cpu`: a Kubernetes CPU quantity, a JSON number of cores or a string (`0.5`, `"2"`,
 * `"500m"`), 1m to {@link RESOURCE_LIMITS}.cpu cores (contract/cpu.ts); output in cores.
 */
const cpuQuantity = z.unknown().transform((value, ctx) => {
  if (value === undefined) {
    ctx.addIssue({ code: 'custom', message: 'is required' });
    return z.NEVER;
  }
  const parsed = parseCpuQuantity(value, RESOURCE_LIMITS.cpu);
  if ('problem' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  }
  return coresOf(parsed.millicores);
});

/**
 * A lifetime as AIP-142 spells it (`"3600s"`), above 0 s and at most MAX_TTL_LIMIT_MS; parsed
 * to ms.
 */
export const ttlDuration = z
  .string({ error: 'must be a duration string such as "3600s"' })
  .transform((text, ctx) => {
    const ms = parseDurationMs(text);
    if (ms === undefined || ms <= 0 || ms > MAX_TTL_LIMIT_MS) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a duration such as "3600s", above 0s and at most ${formatDuration(MAX_TTL_LIMIT_MS)}`,
      });
      return z.NEVER;
    }
    return ms;
  });

/** The create body's schema over a template catalog. */
export function createRequestSchema(templates: Record<string, TemplateConfig>) {
  const names = Object.keys(templates).sort();
  return z
    .strictObject(
      {
        template: z
          .string({
            error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string'),
          })
          .refine((name) => Object.hasOwn(templates, name), {
            error: `must be one of: ${names.join(', ')}`,
          }),
        resources: z.strictObject(
          {
            cpu: cpuQuantity,
            memory_mib: positiveInteger(RESOURCE_LIMITS.memoryMib),
            disk_mib: positiveInteger(RESOURCE_LIMITS.diskMib),
          },
          {
            error: (issue) =>
              issue.input === undefined
                ? 'is required'
                : 'must be an object with cpu, memory_mib and disk_mib',
          },
        ),
        ttl: ttlDuration.optional(),
        // Checked by parseLabels (contract/labels.ts), whose problems name the label.
        labels: z.unknown().optional(),
      },
      { error: 'must be a JSON object' },
    )
    .superRefine((request, ctx) => {
      // The template's longest lifetime (`max_ttl`), below the global limit.
      const template = templates[request.template];
      const maxMs = template && lifetimeOf(template).maxMs;
      if (request.ttl !== undefined && maxMs !== undefined && request.ttl > maxMs) {
        ctx.addIssue({
          code: 'custom',
          path: ['ttl'],
          message: `must be at most ${template?.max_ttl} (max_ttl of template ${request.template})`,
        });
      }
      // The template's own largest disk (`max_disk_mib`), below the global limit.
      const max = templates[request.template]?.max_disk_mib;
      if (max !== undefined && request.resources.disk_mib > max) {
        ctx.addIssue({
          code: 'custom',
          path: ['resources', 'disk_mib'],
          message: `must be at most ${max} for template ${request.template}`,
        });
      }
    });
}

// Building the schema costs more than checking a body; a catalog is built once per process.
const schemas = new WeakMap<object, ReturnType<typeof createRequestSchema>>();

/** The create body's schema of a catalog, built on first use. */
function schemaOf(templates: Record<string, TemplateConfig>) {
  let schema = schemas.get(templates);
  if (!schema) {
    schema = createRequestSchema(templates);
    schemas.set(templates, schema);
  }
  return schema;
}

/** One problem of a request, with its field path (`resources.cpu`, or `body`/`query`). */
export interface FieldProblem {
  field: string;
  message: string;
  /** Where in the field's text the problem is (1-based): a malformed label selector's. */
  position?: number;
}

/** The message of a field the schema does not have. */
const UNKNOWN_FIELD = 'is not a known field';

function problemsOf(error: z.ZodError, root: string): FieldProblem[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: path ? `${path}.${key}` : key,
        message: UNKNOWN_FIELD,
      }));
    }
    const position = issue.code === 'custom' ? issue.params?.position : undefined;
    return [
      {
        field: path || root,
        message: issue.message,
        ...(typeof position === 'number' && { position }),
      },
    ];
  });
}

/**
 * The error of a bad request: the message names the first problem, an unknown field before any
 * other (`resources.memory` sent for `resources.memory_mib` is the mistake, not the missing
 * `memory_mib` zod also reports); `details.problems` lists them all in that order.
 */
function invalid(found: FieldProblem[], root: string): ApiError {
  const unknown = (problem: FieldProblem) => problem.message === UNKNOWN_FIELD;
  const problems = [...found.filter(unknown), ...found.filter((p) => !unknown(p))];
  const [first] = problems;
  const message = first ? `${first.field} ${first.message}` : `${root} is invalid`;
  return new ApiError('invalid_request', message, { problems });
}

/**
 * Checks a create body against the template catalog and the resource limits.
 * @returns the body, typed, resources converted from the wire (contract/sandbox-json.ts)
 * @throws ApiError `invalid_request` naming the first bad field; `details.problems` lists all
 */
export function parseCreateRequest(
  body: unknown,
  templates: Record<string, TemplateConfig>,
): CreateRequest {
  if (body === undefined) {
    throw new ApiError('invalid_request', 'body must be a JSON object', {
      problems: [{ field: 'body', message: 'must be a JSON object' }],
    });
  }
  const parsed = schemaOf(templates).safeParse(body);
  const labels = labelsOf(body);
  const labelProblems = 'problems' in labels ? labels.problems : [];
  if (!parsed.success || labelProblems.length > 0) {
    throw invalid(
      [...(parsed.success ? [] : problemsOf(parsed.error, 'body')), ...labelProblems],
      'body',
    );
  }
  const { template, resources, ttl } = parsed.data;
  const defaultMs = lifetimeOf(templates[template] ?? {}).defaultMs;
  const lifetime =
    ttl !== undefined
      ? { ttlMs: ttl, from: 'request' as const }
      : defaultMs !== undefined
        ? { ttlMs: defaultMs, from: 'template' as const }
        : undefined;
  return {
    template,
    resources: resourcesFromWire(resources),
    ...(lifetime && { lifetime }),
    ...('labels' in labels && Object.keys(labels.labels).length > 0 && { labels: labels.labels }),
  };
}

/** The `labels` of a request body, checked (contract/labels.ts `parseLabels`); none: {}. */
function labelsOf(
  body: unknown,
): { labels: Record<string, string> } | { problems: FieldProblem[] } {
  const value =
    body !== null && typeof body === 'object' && !Array.isArray(body)
      ? (body as { labels?: unknown }).labels
      : undefined;
  return value === undefined ? { labels: {} } : parseLabels(value);
}

const pageSize = z
  .string({ error: 'must be given once' })
  .regex(/^\d{1,4}$/, { error: `must be an integer from 1 to ${PAGE_SIZE.max}` })
  .transform(Number)
  .refine((n) => n >= 1 && n <= PAGE_SIZE.max, {
    error: `must be an integer from 1 to ${PAGE_SIZE.max}`,
  })
  .default(PAGE_SIZE.default);
// An empty page_token asks for the first page, as no token does (AIP-158).
const pageToken = z
  .string({ error: 'must be given once' })
  .max(4096, { error: 'must be at most 4096 characters' })
  .optional()
  .transform((token) => (token === '' ? undefined : token));

/**
 * A query parameter that takes several values, repeated (`state=a&state=b`) or comma separated
 * (`state=a,b`), each one of `allowed`.
 */
function valuesOf<T extends string>(allowed: readonly T[]) {
  const message = `must be one or more of: ${allowed.join(', ')} (repeated, or comma separated)`;
  return z
    .union([z.string(), z.array(z.string())], { error: message })
    .transform((given, ctx) => {
      const values = [given]
        .flat()
        .flatMap((part) => part.split(','))
        .map((part) => part.trim());
      if (values.some((value) => !(allowed as readonly string[]).includes(value))) {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      return [...new Set(values)] as T[];
    })
    .optional();
}

/** A moment as RFC 3339 sends it, in the store's spelling (ISO-8601 UTC, milliseconds). */
export interface Moment {
  /** The moment, rounded down to the millisecond, as `toISOString()` writes it. */
  iso: string;
  /** True when the text had digits below the millisecond that were not all zero. */
  finer: boolean;
}

const RFC_3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Reads an RFC 3339 date-time (`2026-12-03T10:00:00Z`, `…T10:00:00.5+02:00`): a real date and
 * time with a `Z` or numeric offset (RFC 3339 section 5.6).
 * @returns the moment, or undefined for any other text
 */
export function parseRfc3339(text: string): Moment | undefined {
  const match = RFC_3339.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction = '', offset] =
    match as unknown as string[];
  const ms = Date.parse(
    `${year}-${month}-${day}T${hour}:${minute}:${second}.${fraction.padEnd(3, '0').slice(0, 3)}${offset === 'z' ? 'Z' : offset}`,
  );
  if (!Number.isFinite(ms)) return undefined;
  // Date.parse rolls 2026-02-30 over to March: only a date that exists reads back the same.
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (
    date.getUTCMonth() !== Number(month) - 1 ||
    Number(hour) > 23 ||
    Number(minute) > 59 ||
    Number(second) > 59
  ) {
    return undefined;
  }
  return { iso: new Date(ms).toISOString(), finer: /[1-9]/.test(fraction.slice(3)) };
}

/**
 * `create_time_after` / `create_time_before`: an RFC 3339 time. After is inclusive, before
 * exclusive; a time finer than the store's milliseconds is rounded so neither moves past a row
 * it should not.
 */
function createTime() {
  const message = 'must be an RFC 3339 time such as "2026-12-03T10:00:00Z"';
  return z
    .string({ error: 'must be given once' })
    .transform((text, ctx) => {
      const moment = parseRfc3339(text);
      if (!moment) {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      // Rows are stored at whole milliseconds: "at or after 10.0005" is "at or after 10.001",
      // and "before 10.0005" is "before 10.001".
      return moment.finer ? new Date(Date.parse(moment.iso) + 1).toISOString() : moment.iso;
    })
    .optional();
}

/** `label_selector`: a Kubernetes label selector (contract/labels.ts), parsed. */
const labelSelector = z
  .string({ error: 'must be given once' })
  .max(4096, { error: 'must be at most 4096 characters' })
  .transform((text, ctx) => {
    try {
      return parseLabelSelector(text);
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      ctx.addIssue({
        code: 'custom',
        message: `is not a valid label selector: ${err.message}`,
        params: { position: err.position },
      });
      return z.NEVER;
    }
  })
  .optional();

const sandboxListQuery = z.strictObject({
  state: valuesOf(SANDBOX_STATES),
  template: z
    .string({ error: 'must be given once' })
    .min(1, { error: 'must not be empty' })
    .max(253, { error: 'must be at most 253 characters' })
    .optional(),
  label_selector: labelSelector,
  create_time_after: createTime(),
  create_time_before: createTime(),
  limit: pageSize,
  page_token: pageToken,
});

const operationListQuery = z.strictObject({
  status: valuesOf(OPERATION_STATUSES),
  type: valuesOf(OPERATION_TYPES),
  sandbox_id: z
    .string({ error: 'must be given once' })
    .regex(SANDBOX_ID, { error: 'must be a sandbox id (sbx_…)' })
    .optional(),
  create_time_after: createTime(),
  create_time_before: createTime(),
  limit: pageSize,
  page_token: pageToken,
});

/** Events one `GET /v1/events` page holds at most, and by default. */
export const EVENT_PAGE_SIZE = { default: 100, max: 500 } as const;

const eventTypeList = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((given) => [
    ...new Set((given === undefined ? [] : [given].flat()).flatMap((v) => v.split(','))),
  ])
  .pipe(
    z.array(
      z.enum(WEBHOOK_EVENT_TYPES, {
        error: `must each be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      }),
    ),
  );

const eventListQuery = z.strictObject({
  after: z
    .string({ error: 'must be given once' })
    .max(512, { error: 'is not a cursor this service issued' })
    .optional()
    .transform((token) => (token === '' ? undefined : token)),
  type: eventTypeList,
  sandbox: z
    .string({ error: 'must be given once' })
    .min(1, { error: 'must be a sandbox id' })
    .max(64, { error: 'must be a sandbox id' })
    .optional(),
  limit: z
    .string({ error: 'must be given once' })
    .regex(/^\d{1,4}$/, { error: `must be an integer from 1 to ${EVENT_PAGE_SIZE.max}` })
    .transform(Number)
    .refine((n) => n >= 1 && n <= EVENT_PAGE_SIZE.max, {
      error: `must be an integer from 1 to ${EVENT_PAGE_SIZE.max}`,
    })
    .default(EVENT_PAGE_SIZE.default),
  wait: z
    .string({ error: 'must be given once' })
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return 0;
      const ms = parseWait(value);
      if (ms === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `must be a duration such as 30s or 500ms (capped at ${MAX_WAIT_MS / 1000}s)`,
        });
        return z.NEVER;
      }
      return ms;
    }),
});

/** A validated `GET /v1/events` query. */
export interface EventListQuery {
  /** The cursor, undecoded; undefined: from the oldest kept event. */
  after?: string;
  /** Types asked for, without repeats; []: every type. */
  types: WebhookEventType[];
  sandbox?: string;
  limit: number;
  /** How long to wait for an event, in ms (0: no wait). */
  waitMs: number;
}

/**
 * Checks `GET /v1/events` query parameters (`after`, `type` repeated or comma-separated,
 * `sandbox`, `limit` 1..500 default 100, `wait` a duration up to 60 s).
 * @throws ApiError `invalid_request` naming the parameter
 */
export function parseEventListQuery(query: unknown): EventListQuery {
  const parsed = parseQuery(eventListQuery, query);
  return {
    ...(parsed.after !== undefined && { after: parsed.after }),
    types: parsed.type,
    ...(parsed.sandbox !== undefined && { sandbox: parsed.sandbox }),
    limit: parsed.limit,
    waitMs: parsed.wait,
  };
}

/** A validated `GET /v1/sandboxes` query. */
export interface SandboxListQuery {
  state?: SandboxState[];
  template?: string;
  label_selector?: LabelSelector;
  create_time_after?: string;
  create_time_before?: string;
  limit: number;
  page_token?: string;
}
/** A validated `GET /v1/operations` query. */
export interface OperationListQuery {
  status?: OperationStatus[];
  type?: OperationType[];
  sandbox_id?: string;
  create_time_after?: string;
  create_time_before?: string;
  limit: number;
  page_token?: string;
}

function parseQuery<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query ?? {});
  if (!parsed.success) throw invalid(problemsOf(parsed.error, 'query'), 'query');
  return parsed.data;
}

/**
 * Checks `GET /v1/sandboxes` query parameters: `state` (several), `template`, `label_selector`,
 * `create_time_after`, `create_time_before`, `limit` 1..200 default 50, `page_token`.
 * @throws ApiError `invalid_request` naming the parameter (a bad selector: where, as
 *   `details.position`, 1-based)
 */
export function parseSandboxListQuery(query: unknown): SandboxListQuery {
  return parseQuery(sandboxListQuery, query);
}

/**
 * Checks `GET /v1/operations` query parameters: `status` and `type` (several), `sandbox_id`,
 * `create_time_after`, `create_time_before`, `limit` 1..200 default 50, `page_token`.
 * @throws ApiError `invalid_request` naming the parameter
 */
export function parseOperationListQuery(query: unknown): OperationListQuery {
  return parseQuery(operationListQuery, query);
}

/**
 * A validated label change (`PATCH /v1/sandboxes/{id}`, AIP-134): the new labels, and with an
 * update mask of `labels.<key>` paths the keys it changes (absent: the whole map).
 */
export interface LabelUpdate {
  labels: Record<string, string>;
  keys?: string[];
}

/** The fields `PATCH /v1/sandboxes/{id}` may change. */
const UPDATABLE = 'labels';

/**
 * The paths of an update mask (AIP-161): comma separated, a map key after `labels.`, in
 * backticks when it holds characters other than letters, digits and `_` (backticks are also
 * accepted around a plain key; a key without them is the rest of the path).
 */
function maskPaths(mask: string): string[] {
  const paths: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of mask) {
    if (ch === '`') quoted = !quoted;
    if (ch === ',' && !quoted) {
      paths.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  paths.push(current.trim());
  return paths;
}

/**
 * Checks a label change: the body `{"labels": {...}}` (labels as on a create), and the
 * `update_mask` query parameter (AIP-134): absent, `*` or `labels` replaces the whole map;
 * `labels.team,labels.\`example.com/env\`` changes those keys alone (set from the body, or
 * removed when the body has no such key); labels of the body outside the mask are ignored.
 * @throws ApiError `invalid_request` naming the field or the path
 */
export function parseLabelUpdate(body: unknown, query: unknown): LabelUpdate {
  const problem = (field: string, message: string) =>
    new ApiError('invalid_request', `${field} ${message}`, { problems: [{ field, message }] });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw problem('body', 'must be a JSON object such as {"labels": {"team": "a"}}');
  }
  for (const field of Object.keys(body)) {
    if (field !== UPDATABLE) {
      throw problem(
        field,
        `cannot be changed: a sandbox's ${UPDATABLE} alone can (or is not a known field)`,
      );
    }
  }
  const rawMask = (query as Record<string, unknown> | undefined)?.update_mask;
  if (rawMask !== undefined && typeof rawMask !== 'string') {
    throw problem('query.update_mask', 'must be given once');
  }
  const unknown = Object.keys((query as Record<string, unknown> | undefined) ?? {}).find(
    (name) => name !== 'update_mask',
  );
  if (unknown !== undefined) throw problem(`query.${unknown}`, 'is not a known field');
  const given = (body as { labels?: unknown }).labels;
  const parsed = given === undefined ? { labels: {} } : parseLabels(given);
  if ('problems' in parsed) throw invalid(parsed.problems, 'body');
  const paths = rawMask === undefined ? ['labels'] : maskPaths(rawMask);
  if (paths.includes('*') || paths.includes(UPDATABLE)) {
    if (paths.length > 1) {
      throw problem(
        'query.update_mask',
        `names ${UPDATABLE} whole: it cannot also name paths inside it`,
      );
    }
    if (given === undefined && rawMask !== '*') {
      throw problem('body.labels', 'is required (send {"labels": {}} to remove every label)');
    }
    return { labels: parsed.labels };
  }
  const keys: string[] = [];
  for (const path of paths) {
    if (!path.startsWith(`${UPDATABLE}.`)) {
      throw problem(
        'query.update_mask',
        `path ${JSON.stringify(path)} cannot be changed: only ${UPDATABLE} and ${UPDATABLE}.<key> can`,
      );
    }
    let key = path.slice(UPDATABLE.length + 1);
    if (key.startsWith('`') && key.endsWith('`') && key.length >= 2) key = key.slice(1, -1);
    const errors = labelKeyErrors(key);
    if (errors.length > 0) {
      throw problem(
        'query.update_mask',
        `path ${JSON.stringify(path)} names no label key: ${errors.join('; ')}`,
      );
    }
    keys.push(key);
  }
  return { labels: parsed.labels, keys: [...new Set(keys)] };
}

/** A validated extend (`POST /v1/sandboxes/{id}:extend`): a new lifetime from now, or a time. */
export type ExtendRequest = { ttlMs: number } | { expireTimeMs: number };

const extendRequest = z
  .strictObject(
    {
      ttl: ttlDuration.optional(),
      expire_time: z
        .string({ error: 'must be an RFC 3339 time string' })
        .refine((text) => /^\d{4}-\d{2}-\d{2}T/.test(text) && Number.isFinite(Date.parse(text)), {
          error: 'must be an RFC 3339 time such as "2026-12-03T10:00:00Z"',
        })
        .transform((text) => Date.parse(text))
        .optional(),
    },
    { error: 'must be a JSON object' },
  )
  .refine((body) => (body.ttl === undefined) !== (body.expire_time === undefined), {
    error: 'must give exactly one of ttl and expire_time',
  });

/**
 * Checks an extend body (AIP-214: `ttl`, counted from now, or `expire_time`).
 * @throws ApiError `invalid_request` naming the field
 */
export function parseExtendRequest(body: unknown): ExtendRequest {
  const parsed = extendRequest.safeParse(body ?? undefined);
  if (!parsed.success) throw invalid(problemsOf(parsed.error, 'body'), 'body');
  const { ttl, expire_time: expireTimeMs } = parsed.data;
  return ttl !== undefined ? { ttlMs: ttl } : { expireTimeMs: expireTimeMs as number };
}
