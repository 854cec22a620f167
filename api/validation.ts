/**
 * Request validation with zod (docs/api.md): strict objects, so unknown fields are
 * rejected, and messages that name the field (`resources.disk_mib must be a positive integer`).
 * Everything here throws {@link ApiError} `invalid_request` (400) before any workflow starts.
 */
import { z } from 'zod';
import { lifetimeOf, type TemplateConfig } from '../config/index.js';
import {
  OPERATION_STATUSES,
  PAGE_SIZE,
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
} from '../contract/index.js';
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
    return [{ field: path || root, message: issue.message }];
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
  if (!parsed.success) throw invalid(problemsOf(parsed.error, 'body'), 'body');
  const { template, resources, ttl } = parsed.data;
  const defaultMs = lifetimeOf(templates[template] ?? {}).defaultMs;
  const lifetime =
    ttl !== undefined
      ? { ttlMs: ttl, from: 'request' as const }
      : defaultMs !== undefined
        ? { ttlMs: defaultMs, from: 'template' as const }
        : undefined;
  return { template, resources: resourcesFromWire(resources), ...(lifetime && { lifetime }) };
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

const sandboxListQuery = z.strictObject({
  state: z
    .enum(SANDBOX_STATES, { error: `must be one of: ${SANDBOX_STATES.join(', ')}` })
    .optional(),
  limit: pageSize,
  page_token: pageToken,
});

const operationListQuery = z.strictObject({
  status: z
    .enum(OPERATION_STATUSES, { error: `must be one of: ${OPERATION_STATUSES.join(', ')}` })
    .optional(),
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
export type SandboxListQuery = z.output<typeof sandboxListQuery>;
/** A validated `GET /v1/operations` query. */
export type OperationListQuery = z.output<typeof operationListQuery>;

function parseQuery<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query ?? {});
  if (!parsed.success) throw invalid(problemsOf(parsed.error, 'query'), 'query');
  return parsed.data;
}

/**
 * Checks `GET /v1/sandboxes` query parameters (`state`, `limit` 1..200 default 50, `page_token`).
 * @throws ApiError `invalid_request` naming the parameter
 */
export function parseSandboxListQuery(query: unknown): SandboxListQuery {
  return parseQuery(sandboxListQuery, query);
}

/**
 * Checks `GET /v1/operations` query parameters (`status`, `limit` 1..200 default 50, `page_token`).
 * @throws ApiError `invalid_request` naming the parameter
 */
export function parseOperationListQuery(query: unknown): OperationListQuery {
  return parseQuery(operationListQuery, query);
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
