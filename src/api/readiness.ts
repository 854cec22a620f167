/**
 * The API's readiness (docs/api.md, "Readiness"): Temporal and the store answer, the Temporal
 * namespace has the search attributes the workflows use, and the cluster can be used
 * (reachable, the API's own credentials accepted; the API needs no permission there, so it
 * asks for none: src/kubernetes/cluster-check.ts, `API_PERMISSIONS`). One report, shared by `/readyz`
 * and the create routes, kept current off the request path: a report younger than
 * {@link READINESS_CACHE_MS} is served as it is; an older one is served at once while a new one
 * is measured in the background; only a report older than {@link READINESS_MAX_AGE_MS} (or
 * none yet) makes the caller wait for a measurement. So a create never waits for the probes,
 * and a probe that merely runs out of time under load does not turn creates away while the
 * check passed within {@link READINESS_MAX_AGE_MS}; a definite answer (denied, refused,
 * unreachable) counts at once.
 */
import { API_PERMISSIONS, checkCluster } from '../kubernetes/cluster-check.js';
import { checkSearchAttributes } from '../temporal/search-attributes.js';
import type { AppDeps } from './deps.js';

/** How long a readiness report is served without measuring again, in ms. */
export const READINESS_CACHE_MS = 5_000;

/**
 * The oldest report served without waiting for a new one, in ms (30 s); also how long a check
 * that passed stays `ok` while its probe only times out.
 */
export const READINESS_MAX_AGE_MS = 30_000;

/** How long each check may take, in ms. */
export const READINESS_TIMEOUT_MS = 2_000;

/** The checks, each `ok` or a message naming what is wrong. */
export interface ReadinessReport {
  checks: {
    temporal: string;
    store: string;
    search_attributes: string;
    /** Absent when the API was given no Kubernetes client. */
    cluster?: string;
  };
  /** Search attributes registered with the right type: the ones a create may set. */
  searchAttributes: string[];
  /** Problems that degrade the service without stopping it (e.g. no events permissions). */
  warnings?: string[];
  /** Whether every check is `ok`. */
  ready: boolean;
  /** The failing checks' messages, joined: `cluster: …; search_attributes: …`. */
  problem?: string;
}

/**
 * A readiness source. `report()` answers the latest report at once when it is younger than
 * {@link READINESS_MAX_AGE_MS} (measuring a new one in the background once it is older than
 * {@link READINESS_CACHE_MS}); otherwise it waits for a measurement (at most
 * {@link READINESS_TIMEOUT_MS} per check, all at once).
 */
export interface Readiness {
  report(): Promise<ReadinessReport>;
}

/** A check's failure because its probe did not answer in time (not a definite answer). */
class ProbeTimeout extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ProbeTimeout(`${what} did not answer within ${ms} ms`)),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Options of {@link createReadiness}; tests set them. */
export interface ReadinessOptions {
  /** The clock, epoch ms (default Date.now). */
  now?: () => number;
  /** How long each check may take, in ms (default {@link READINESS_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/** Builds the readiness of an API over its dependencies. */
export function createReadiness(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config' | 'kubernetes'>,
  { now = Date.now, timeoutMs = READINESS_TIMEOUT_MS }: ReadinessOptions = {},
): Readiness {
  /** The latest settled report, and when its measurement started (epoch ms). */
  let latest: { atMs: number; report: ReadinessReport } | undefined;
  /** When each check last passed (epoch ms), by check name. */
  const lastOkAtMs = new Map<string, number>();
  let measuring: Promise<ReadinessReport> | undefined;

  async function measure(startedAtMs: number): Promise<ReadinessReport> {
    const [temporal, store, attributes, cluster] = await Promise.allSettled([
      withTimeout(deps.temporal.workflowService.getSystemInfo({}), timeoutMs, 'temporal'),
      withTimeout(deps.store.ping(), timeoutMs, 'store'),
      withTimeout(
        checkSearchAttributes(
          deps.temporal.connection,
          deps.config.temporalNamespace,
          deps.config.temporalAddress,
        ),
        timeoutMs,
        'temporal',
      ),
      deps.kubernetes
        ? withTimeout(checkCluster(deps.kubernetes, API_PERMISSIONS), timeoutMs, 'the apiserver')
        : Promise.resolve(undefined),
    ]);
    const checks: ReadinessReport['checks'] = {
      temporal: temporal.status === 'fulfilled' ? 'ok' : messageOf(temporal.reason),
      store: store.status === 'fulfilled' ? 'ok' : messageOf(store.reason),
      search_attributes:
        attributes.status === 'fulfilled'
          ? (attributes.value.problem ?? 'ok')
          : messageOf(attributes.reason),
    };
    if (deps.kubernetes) {
      checks.cluster =
        cluster.status === 'rejected'
          ? messageOf(cluster.reason)
          : cluster.value?.ok === false
            ? cluster.value.problem
            : 'ok';
    }
    const warnings: string[] = [];
    const settled = { temporal, store, search_attributes: attributes, cluster };
    for (const [name, outcome] of Object.entries(settled)) {
      if (checks[name as keyof typeof checks] === 'ok') lastOkAtMs.set(name, startedAtMs);
      // A probe that only ran out of time (a loaded machine) keeps a recent pass.
      const okAtMs = lastOkAtMs.get(name);
      if (
        outcome.status === 'rejected' &&
        outcome.reason instanceof ProbeTimeout &&
        okAtMs !== undefined &&
        startedAtMs - okAtMs < READINESS_MAX_AGE_MS
      ) {
        warnings.push(
          `${name}: ${outcome.reason.message}; it passed ${startedAtMs - okAtMs} ms ago`,
        );
        checks[name as keyof typeof checks] = 'ok';
      }
    }
    const failing = Object.entries(checks).filter(([, state]) => state !== 'ok');
    const warning =
      cluster.status === 'fulfilled' && cluster.value?.ok ? cluster.value.warning : undefined;
    if (warning) warnings.push(`cluster: ${warning}`);
    const registered =
      attributes.status === 'fulfilled'
        ? attributes.value.registered
        : (latest?.report.searchAttributes ?? []);
    return {
      checks,
      ...(warnings.length > 0 ? { warnings } : {}),
      searchAttributes: registered,
      ready: failing.length === 0,
      problem:
        failing.length === 0
          ? undefined
          : failing.map(([name, message]) => `${name}: ${message}`).join('; '),
    };
  }

  /** One measurement at a time; the latest report is replaced when it settles. */
  function refresh(): Promise<ReadinessReport> {
    if (!measuring) {
      const startedAtMs = now();
      measuring = measure(startedAtMs)
        .then((report) => {
          latest = { atMs: startedAtMs, report };
          return report;
        })
        .finally(() => {
          measuring = undefined;
        });
    }
    return measuring;
  }

  return {
    report() {
      const ageMs = latest ? now() - latest.atMs : Infinity;
      if (!latest || ageMs >= READINESS_MAX_AGE_MS) return refresh();
      if (ageMs >= READINESS_CACHE_MS) refresh().catch(() => undefined);
      return Promise.resolve(latest.report);
    },
  };
}
