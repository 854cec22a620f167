/**
 * `npm run bench -- floors`: the refusal before 202 (docs/configuration.md, "Templates"). After one refused
 * create has taught the floor of template `known`, POST with disk 300 -> 400 on both routes,
 * 20 sequential and 100 concurrent, side by side with the same request for templates whose
 * floor is unknown (asynchronous: 202; synchronous: 400 from the node). Goal: p50 <= 10 ms for
 * the known floor. Beside them, GET /healthz the same way: what any route costs on this
 * machine. Every answer is checked, and that no known-floor request created a pod.
 */
import {
  asyncCreate,
  atOnce,
  awaitOperation,
  expectRefused,
  isDone,
  oneAtATime,
  podCount,
  post,
  problems,
  startStack,
  summary,
  type Operation,
} from './support.js';

/** How the operations are read: a GET every 50 ms. */
const POLLING = { everyMs: 50 } as const;

/**
 * Runs the floors mode on a stack of its own.
 * @returns ms summaries per case and route, the /healthz baseline, pods left, peak RSS (MiB)
 *   and whether the goal was met; failed checks go to `problems`
 */
export async function measureFloors(): Promise<Record<string, unknown>> {
  const stack = await startStack();
  const { base } = stack;
  try {
    console.log(`stack up at ${base} (pid ${stack.pid}); warming up`);
    expectRefused(
      (await asyncCreate(base, { diskMib: 300, template: 'known' }, isDone, POLLING)).op,
    );
    const podsBefore = await podCount(stack);
    const results: Record<string, unknown> = {};
    const accepted: Operation[] = [];
    const known = 'template known needs at least 451 MiB';
    const cases = [
      {
        name: 'known_floor_async_400',
        route: '/v1/sandboxes',
        fresh: false,
        status: 400,
        text: known,
      },
      {
        name: 'known_floor_sync_400',
        route: '/sync/v1/sandboxes',
        fresh: false,
        status: 400,
        text: known,
      },
      {
        name: 'unknown_floor_async_202',
        route: '/v1/sandboxes',
        fresh: true,
        status: 202,
        text: '"status":"running"',
      },
      {
        name: 'unknown_floor_sync_400',
        route: '/sync/v1/sandboxes',
        fresh: true,
        status: 400,
        text: '451 MiB',
      },
    ];
    for (const c of cases) {
      const request = async (): Promise<number> => {
        const template = c.fresh ? stack.fresh.take() : 'known';
        const result = await post(base, c.route, { diskMib: 300, template });
        if (result.status !== c.status || !result.text.includes(c.text)) {
          problems.push(
            `${c.name} answered ${result.status} ${result.text.slice(0, 200)}, expected ${c.status}`,
          );
        }
        if (result.status === 202) accepted.push(JSON.parse(result.text) as Operation);
        return result.ms;
      };
      results[`${c.name}_sequential_ms`] = summary(await oneAtATime(20, request));
      results[`${c.name}_concurrent100_ms`] = summary(await atOnce(100, request));
    }
    // The accepted creates end refused by the node; then no pod may be left.
    for (const op of accepted) expectRefused(await awaitOperation(base, op, isDone, POLLING));
    results.pods_left = await podCount(stack);
    if (podsBefore !== 0 || results.pods_left !== 0)
      problems.push(
        `pods: ${podsBefore} before the known-floor requests, ${results.pods_left} at the end; expected 0`,
      );
    // The transport's own floor on this machine, in the same run: GET /healthz (no token, no store).
    const probe = async () => {
      const startedAtMs = performance.now();
      await (await fetch(`${base}/healthz`)).text();
      return performance.now() - startedAtMs;
    };
    results.baseline_healthz_sequential_ms = summary(await oneAtATime(20, probe));
    results.baseline_healthz_concurrent100_ms = summary(await atOnce(100, probe));
    const p50 = (name: string) => (results[name] as { p50: number }).p50;
    results.goal_known_floor_p50_le_10ms =
      p50('known_floor_async_400_sequential_ms') <= 10 &&
      p50('known_floor_async_400_concurrent100_ms') <= 10;
    results.stack_peak_rss_mib = stack.peakRssMib();
    console.log('\nresults (ms unless noted):');
    for (const [name, value] of Object.entries(results))
      console.log(`  ${name.padEnd(44)} ${JSON.stringify(value)}`);
    return results;
  } finally {
    await stack.stop();
  }
}
