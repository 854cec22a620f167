/**
 * The create path's Prometheus metrics (prom-client, the worker's registry), recorded by the
 * activities and the readiness watch. Served by the worker's metrics server
 * (src/worker/metrics-server.ts) only, also in the embedded stack: one owner per series.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The worker's registry (and the process metrics when the process is a worker). */
export const workerRegistry = new Registry();
import type { WatchObserver } from '../kubernetes/sandbox-informers.js';

/** The metrics the activities record. */
export interface CreateMetrics {
  registry: Registry;
  /** Creates that ended, by outcome (`succeeded`, `failed`, `cancelled`) and error code. */
  createsFinished: Counter<'outcome' | 'code'>;
  /** Seconds from a refusal event's lastTimestamp (1 s resolution) to the sandbox failing. */
  refusalToFailureSeconds: Histogram;
  /**
   * Re-placements: placements a node refused with a code of the template's `replace_on`, by
   * template and shim code (docs/architecture.md, "Re-placement").
   */
  replacements: Counter<'template' | 'code'>;
  /**
   * Compensation deletes that stopped at a refusal of the service's account (RBAC 403, 401)
   * past its bound and left the pod to the orphan sweeper, by error class.
   */
  podsLeftToSweeper: Counter<'error_class'>;
  /**
   * Sandboxes whose lifetime ended, by template: a delete started with cause `expired`
   * (docs/api.md, "Lifetimes").
   */
  sandboxesExpired: Counter<'template'>;
  /** Watch requests by resource and cause (`initial`, `ended`, `timeout`, `dropped`, `status-N`). */
  watchOpens: Counter<'resource' | 'cause'>;
  /** Watch streams open now, by resource. */
  watchesOpen: Gauge<'resource'>;
  /** Feeds the watch metrics from the worker's informers. */
  watchObserver: WatchObserver;
}

let shared: CreateMetrics | undefined;

/**
 * The process's create metrics, registered once in {@link workerRegistry} (calling it again
 * returns the same set).
 */
export function createMetrics(): CreateMetrics {
  if (shared) return shared;
  const createsFinished = new Counter({
    name: 'durable_sandbox_creates_finished_total',
    help: 'Sandbox creates that ended, by outcome and operation error code',
    labelNames: ['outcome', 'code'],
    registers: [workerRegistry],
  });
  const refusalToFailureSeconds = new Histogram({
    name: 'durable_sandbox_refusal_to_failure_seconds',
    help: "Time from the refusal event's lastTimestamp to the sandbox being marked failed",
    buckets: [0.5, 1, 2, 3, 5, 10, 30, 60, 300],
    registers: [workerRegistry],
  });
  const replacements = new Counter({
    name: 'durable_sandbox_replacements_total',
    help: "Placements a node refused with a code of the template's replace_on, by template and code",
    labelNames: ['template', 'code'],
    registers: [workerRegistry],
  });
  const watchOpens = new Counter({
    name: 'durable_sandbox_watch_opens_total',
    help: "Watch requests sent by the worker's informers, by resource and cause",
    labelNames: ['resource', 'cause'],
    registers: [workerRegistry],
  });
  const podsLeftToSweeper = new Counter({
    name: 'durable_sandbox_pods_left_to_sweeper_total',
    help: "Compensation deletes refused by the service account's permissions past their bound, leaving the pod to the orphan sweeper",
    labelNames: ['error_class'],
    registers: [workerRegistry],
  });
  const sandboxesExpired = new Counter({
    name: 'durable_sandbox_sandboxes_expired_total',
    help: 'Sandboxes whose expire_time passed and whose delete (cause expired) was started, by template',
    labelNames: ['template'],
    registers: [workerRegistry],
  });
  const watchesOpen = new Gauge({
    name: 'durable_sandbox_watches_open',
    help: 'Watch streams open now, by resource',
    labelNames: ['resource'],
    registers: [workerRegistry],
  });
  shared = {
    registry: workerRegistry,
    createsFinished,
    refusalToFailureSeconds,
    replacements,
    podsLeftToSweeper,
    sandboxesExpired,
    watchOpens,
    watchesOpen,
    watchObserver: {
      onWatchOpen: (resource, cause) => watchOpens.inc({ resource, cause }),
      onWatchStream: (resource, open) =>
        open ? watchesOpen.inc({ resource }) : watchesOpen.dec({ resource }),
    },
  };
  return shared;
}
