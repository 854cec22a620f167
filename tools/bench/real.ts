/**
 * `npm run bench -- real`: the refusal latency on the simulated cluster and on the real
 * apiserver tier (CLUSTER=real: etcd, kube-apiserver, node agent), one stack after the other in
 * one run, printed side by side (docs/benchmarks.md). For each: 20 sequential asynchronous
 * creates with disk 300 on templates whose floor is unknown, measuring the time from the
 * bench seeing the refusal event (its own events watch in the sandbox namespace, as an admin)
 * to seeing the operation `failed` (a GET every 50 ms), and POST to `failed`; then 20
 * sequential synchronous creates, POST to 400. Every answer is checked, and that each refusal's
 * event was seen.
 */
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import {
  asyncCreate,
  expectRefused,
  expectSyncRefused,
  isDone,
  post,
  problems,
  startStack,
  summary,
  watchRefusals,
  type Summary,
} from './support.js';

/** Refusal latency on one cluster: what `real` prints for each. */
interface RefusalFigures {
  startup_to_banner_ms: number;
  refusal_event_to_failed_ms: Summary;
  refusal_post_to_failed_async_ms: Summary;
  refusal_post_to_400_sync_ms: Summary;
}

const REFUSALS = 20;
const POLLING = { everyMs: 50 } as const;

/**
 * Runs the real mode: a simulated stack, then a real-tier stack (300 s for its start).
 * @returns `figures` per cluster; failed checks go to `problems`
 */
export async function compareRefusalLatency(): Promise<Record<string, unknown>> {
  const figures: Record<string, RefusalFigures> = {};
  for (const cluster of ['simulated', 'real'] as const) {
    const startedAtMs = Date.now();
    const stack = await startStack({ env: { CLUSTER: cluster } });
    const startupMs = Date.now() - startedAtMs;
    try {
      const refusals = await watchRefusals(stack.kubeConfig());
      console.log(`${cluster}: stack up in ${startupMs} ms; warming up`);
      const refused = () => ({ diskMib: 300, template: stack.fresh.take() });
      expectRefused((await asyncCreate(stack.base, refused(), isDone, POLLING)).op);
      const eventToFailed: number[] = [];
      const postToFailed: number[] = [];
      for (let i = 0; i < REFUSALS; i++) {
        const { ms, atMs, op } = await asyncCreate(stack.base, refused(), isDone, POLLING);
        expectRefused(op);
        postToFailed.push(ms);
        const seenAtMs = refusals.seenAtMs(podNameFor(op.sandbox_id, 1));
        if (seenAtMs === undefined) problems.push(`${cluster}: no refusal event seen for ${op.id}`);
        else eventToFailed.push(atMs - seenAtMs);
      }
      const sync: number[] = [];
      for (let i = 0; i < REFUSALS; i++) {
        const result = await post(stack.base, '/sync/v1/sandboxes', refused());
        expectSyncRefused(result);
        sync.push(result.ms);
      }
      refusals.stop();
      figures[cluster] = {
        startup_to_banner_ms: startupMs,
        refusal_event_to_failed_ms: summary(eventToFailed),
        refusal_post_to_failed_async_ms: summary(postToFailed),
        refusal_post_to_400_sync_ms: summary(sync),
      };
    } finally {
      await stack.stop();
    }
  }
  console.log(`\nrefusal latency, ${REFUSALS} sequential creates each (ms):`);
  console.log(`  ${''.padEnd(34)} ${'simulated'.padEnd(40)} real apiserver tier`);
  for (const name of Object.keys(figures.simulated ?? {}) as Array<keyof RefusalFigures>) {
    const cell = (cluster: string) => JSON.stringify(figures[cluster]?.[name] ?? null);
    console.log(`  ${name.padEnd(34)} ${cell('simulated').padEnd(40)} ${cell('real')}`);
  }
  return { figures };
}
