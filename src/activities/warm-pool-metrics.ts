/**
 * The warm pools' metrics on the worker's registry (docs/observability.md, "Warm pools"), one
 * series set per template: pods ready and pending, the size asked for, whether the pool is
 * backing off, claims by outcome (`claimed`, or `empty`: the pool had no ready pod and the
 * create went cold), pods that failed while warming, and how long a warm pod took from its
 * create to its IP (the refill latency).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { workerRegistry } from './metrics.js';

/** The pool metrics, registered once per process. */
export interface WarmPoolMetrics {
  pods: Gauge<'template' | 'state'>;
  desired: Gauge<'template'>;
  backingOff: Gauge<'template'>;
  claims: Counter<'template' | 'outcome'>;
  podFailures: Counter<'template' | 'reason'>;
  podReadySeconds: Histogram<'template'>;
}

let shared: WarmPoolMetrics | undefined;

/** The process's pool metrics. */
export function warmPoolMetrics(): WarmPoolMetrics {
  shared ??= {
    pods: new Gauge({
      name: 'durable_sandbox_warm_pool_pods',
      help: 'Unclaimed pods of each warm pool, by state (ready: has an IP; pending: starting)',
      labelNames: ['template', 'state'],
      registers: [workerRegistry],
    }),
    desired: new Gauge({
      name: 'durable_sandbox_warm_pool_desired',
      help: 'Ready pods each warm pool is asked to keep',
      labelNames: ['template'],
      registers: [workerRegistry],
    }),
    backingOff: new Gauge({
      name: 'durable_sandbox_warm_pool_backing_off',
      help: 'Whether a warm pool makes no pods because they keep failing (1) or not (0)',
      labelNames: ['template'],
      registers: [workerRegistry],
    }),
    claims: new Counter({
      name: 'durable_sandbox_warm_pool_claims_total',
      help: 'Creates that asked a warm pool for a pod, by outcome: claimed, or empty (went cold)',
      labelNames: ['template', 'outcome'],
      registers: [workerRegistry],
    }),
    podFailures: new Counter({
      name: 'durable_sandbox_warm_pool_pod_failures_total',
      help: 'Warm pods deleted because they failed to start, by reason (refused, failed, stuck)',
      labelNames: ['template', 'reason'],
      registers: [workerRegistry],
    }),
    podReadySeconds: new Histogram({
      name: 'durable_sandbox_warm_pool_pod_ready_seconds',
      help: 'Seconds from a warm pod being made to the pool seeing it ready (refill latency)',
      labelNames: ['template'],
      buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers: [workerRegistry],
    }),
  };
  return shared;
}
