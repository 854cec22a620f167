/**
 * The API's Prometheus metrics: request durations by method, route and status, creates started,
 * authentication refusals, and the `GET /metrics` handler serving them. They live in the API's
 * own registry, so in the embedded stack (API and worker in one process) each series has one
 * owner: the worker's endpoint serves the create and watch metrics (src/activities/metrics.ts), this
 * one the API's.
 */
import type { RequestHandler } from 'express';
import { Counter, Histogram, Registry } from 'prom-client';

/** The API's registry (and the process metrics when the process is an API, see src/process/process-metrics.ts). */
export const apiRegistry = new Registry();

let httpDuration: Histogram<'method' | 'route' | 'status'> | undefined;

function durationHistogram(): Histogram<'method' | 'route' | 'status'> {
  httpDuration ??= new Histogram({
    name: 'durable_sandbox_http_request_duration_seconds',
    help: 'HTTP request durations by method, route (the route pattern) and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
    registers: [apiRegistry],
  });
  return httpDuration;
}

let started: Counter<'template'> | undefined;

/**
 * `durable_sandbox_creates_started_total{template}`: creates whose workflow this API started
 * (the worker counts how they finish, see src/activities/metrics.ts).
 */
export function createsStarted(): Counter<'template'> {
  started ??= new Counter({
    name: 'durable_sandbox_creates_started_total',
    help: 'Sandbox creates whose workflow was started',
    labelNames: ['template'],
    registers: [apiRegistry],
  });
  return started;
}

let refused: Counter<'template' | 'source'> | undefined;

/**
 * `durable_sandbox_creates_refused_total{template,source}`: creates this API refused before 202
 * (no workflow, no pod) because `disk_mib` was below the template's rootfs floor; `source` is
 * `declared` or `learned` (src/api/rootfs-floors.ts).
 */
export function createsRefused(): Counter<'template' | 'source'> {
  refused ??= new Counter({
    name: 'durable_sandbox_creates_refused_total',
    help: "Sandbox creates refused before any workflow started: disk below the template's rootfs floor",
    labelNames: ['template', 'source'],
    registers: [apiRegistry],
  });
  return refused;
}

let limitRefused: Counter<'limit'> | undefined;
let limitRefusedByTenant: Counter<'limit' | 'tenant'> | undefined;

/**
 * `durable_sandbox_tenant_limit_refusals_total{limit}`: requests refused with 429 because a
 * tenant reached one of its limits (src/api/tenant-admission.ts; `limit` as in the refusal's
 * `details.limit`). With QUOTA_METRICS_TENANT_LABEL=true the counter is
 * `durable_sandbox_tenant_limit_refusals_by_tenant_total{limit,tenant}` instead (one series per
 * tenant: cardinality is the operator's choice).
 * @param byTenant the counter with the `tenant` label
 */
export function quotaRefusals(byTenant: boolean): Counter<'limit' | 'tenant'> {
  if (byTenant) {
    limitRefusedByTenant ??= new Counter({
      name: 'durable_sandbox_tenant_limit_refusals_by_tenant_total',
      help: 'Requests refused (429) because a tenant reached one of its limits, by limit and tenant',
      labelNames: ['limit', 'tenant'],
      registers: [apiRegistry],
    });
    return limitRefusedByTenant;
  }
  limitRefused ??= new Counter({
    name: 'durable_sandbox_tenant_limit_refusals_total',
    help: 'Requests refused (429) because a tenant reached one of its limits, by limit',
    labelNames: ['limit'],
    registers: [apiRegistry],
  });
  return limitRefused as Counter<'limit' | 'tenant'>;
}

let authRefused: Counter<'reason'> | undefined;

/**
 * `durable_sandbox_auth_refusals_total{reason}`: requests not authenticated, by reason: a 401's
 * `details.reason` (src/api/auth-refusals.ts), or `jwks_unavailable` for a 503 whose JWT could not be
 * checked.
 */
export function authRefusals(): Counter<'reason'> {
  authRefused ??= new Counter({
    name: 'durable_sandbox_auth_refusals_total',
    help: 'Requests refused authentication (401) by reason, and JWTs not checked because the JWKS could not be fetched (503, reason jwks_unavailable)',
    labelNames: ['reason'],
    registers: [apiRegistry],
  });
  return authRefused;
}

/** Observes every request's duration when its response finishes. */
export function httpMetrics(): RequestHandler {
  const histogram = durationHistogram();
  return (req, res, next) => {
    const stop = histogram.startTimer();
    res.on('finish', () => {
      const pattern = (req.route as { path?: unknown } | undefined)?.path;
      stop({
        method: req.method,
        route: typeof pattern === 'string' ? pattern : 'unmatched',
        status: String(res.statusCode),
      });
    });
    next();
  };
}

/** Handler of `GET /metrics`: the API's registry in the Prometheus text format. */
export function metricsHandlers() {
  const metrics: RequestHandler = async (_req, res) => {
    res.type(apiRegistry.contentType).send(await apiRegistry.metrics());
  };
  return { metrics };
}
