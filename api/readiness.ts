/**
 * The API's readiness (docs/api.md, "Readiness"): Temporal and the store answer, the Temporal
 * namespace has the search attributes the workflows use, and the cluster can be used
 * (reachable, credentials accepted, deploy/rbac.yaml granted). One report, cached for
 * {@link READINESS_CACHE_MS} and shared by concurrent callers, so `/readyz` and creates do not
 * hammer Temporal or the apiserver.
 */
import { checkCluster } from '../kubernetes/cluster-check.js';
import { checkSearchAttributes } from '../temporal/search-attributes.js';
import type { AppDeps } from './deps.js';

/** How long a readiness report is reused, in ms. */
export const READINESS_CACHE_MS = 5_000;

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

/** A readiness source: the latest report, at most {@link READINESS_CACHE_MS} old. */
export interface Readiness {
  report(): Promise<ReadinessReport>;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Builds the readiness of an API over its dependencies. */
export function createReadiness(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config' | 'kubernetes'>,
  now: () => number = Date.now,
): Readiness {
  let cached: { atMs: number; report: Promise<ReadinessReport> } | undefined;

  async function measure(): Promise<ReadinessReport> {
    const [temporal, store, attributes, cluster] = await Promise.allSettled([
      withTimeout(
        deps.temporal.workflowService.getSystemInfo({}),
        READINESS_TIMEOUT_MS,
        'temporal',
      ),
      withTimeout(deps.store.ping(), READINESS_TIMEOUT_MS, 'store'),
      withTimeout(
        checkSearchAttributes(
          deps.temporal.connection,
          deps.config.temporalNamespace,
          deps.config.temporalAddress,
        ),
        READINESS_TIMEOUT_MS,
        'temporal',
      ),
      deps.kubernetes
        ? withTimeout(checkCluster(deps.kubernetes), READINESS_TIMEOUT_MS, 'the apiserver')
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
    const failing = Object.entries(checks).filter(([, state]) => state !== 'ok');
    const warning =
      cluster.status === 'fulfilled' && cluster.value?.ok ? cluster.value.warning : undefined;
    return {
      checks,
      ...(warning ? { warnings: [`cluster: ${warning}`] } : {}),
      searchAttributes: attributes.status === 'fulfilled' ? attributes.value.registered : [],
      ready: failing.length === 0,
      problem:
        failing.length === 0
          ? undefined
          : failing.map(([name, message]) => `${name}: ${message}`).join('; '),
    };
  }

  return {
    report() {
      const at = now();
      if (!cached || at - cached.atMs >= READINESS_CACHE_MS) {
        cached = { atMs: at, report: measure() };
      }
      return cached.report;
    },
  };
}
