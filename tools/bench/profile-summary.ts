/**
 * `npx tsx tools/bench/profile-summary.ts <file.cpuprofile> [--by package|function]
 * [--from <s>] [--to <s>] [--per <n>] [--top <n>]`: where a V8 CPU profile's time went, by
 * package (node_modules' package, node's internal module, our file) or by function, self time
 * only, in a window of seconds from the profile's start, optionally per operation. The profiles
 * come from `NODE_OPTIONS_BENCH="--cpu-prof --cpu-prof-dir=<dir>"` on any bench mode (each
 * process writes one file per thread: `.0.` is the main thread; the worker's workflow thread is
 * the one whose top entries are `runInContext` and `@temporalio/worker`'s vm-shared). The
 * format is Chrome DevTools' `Profile` (nodes with call frames and children; `samples` and
 * `timeDeltas` in µs), as `node --cpu-prof` writes it.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** The parts of a V8 `.cpuprofile` this reads. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  /** Node id of each sample. */
  samples: number[];
  /** µs from the sample before (the first: from `startTime`). */
  timeDeltas: number[];
}

/** How samples are grouped. */
export type GroupBy = 'package' | 'function';

/** The group of one call frame: its package (or file, or V8's own entry), or its function. */
export function groupOf(
  frame: CpuProfile['nodes'][number]['callFrame'],
  by: GroupBy,
  root = process.cwd(),
): string {
  const url = frame.url.replace(/^file:\/\//, '');
  const file = url.startsWith(root) ? url.slice(root.length + 1) : url;
  const where = file.replace(/.*node_modules\//, '');
  if (by === 'function')
    return `${frame.functionName || '(anonymous)'} ${where}${where ? `:${frame.lineNumber + 1}` : ''}`;
  if (!url) return frame.functionName || '(native)';
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  return pkg?.[1] ?? file;
}

/**
 * Self time per group within `[fromS, toS]` seconds of the profile's start, ms. A sample's time
 * is the delta to the next sample (what it stood for). `(idle)` is kept apart.
 * @returns the groups, most time first, and the busy (not idle) ms of the window
 */
export function selfTime(
  profile: CpuProfile,
  by: GroupBy,
  window: { fromS?: number; toS?: number } = {},
  root?: string,
): { busyMs: number; idleMs: number; groups: Array<[string, number]> } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const fromUs = (window.fromS ?? 0) * 1e6;
  const toUs = (window.toS ?? Infinity) * 1e6;
  const totals = new Map<string, number>();
  let at = 0;
  let busy = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs || at > toUs) continue;
    const us = profile.timeDeltas[i + 1] ?? 0;
    const frame = nodes.get(profile.samples[i]!)?.callFrame;
    if (!frame) continue;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    const group = groupOf(frame, by, root);
    totals.set(group, (totals.get(group) ?? 0) + us);
  }
  return {
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    groups: [...totals]
      .map(([group, us]): [string, number] => [group, us / 1000])
      .sort((a, b) => b[1] - a[1]),
  };
}

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** The command line: prints the table. */
function main(args: string[]): void {
  const file = args[0];
  if (!file || file.startsWith('--')) {
    console.error(
      'usage: profile-summary.ts <file.cpuprofile> [--by package|function] [--from s] [--to s] [--per n] [--top n]',
    );
    process.exit(2);
  }
  const by = (argValue(args, '--by') ?? 'package') as GroupBy;
  const per = Number(argValue(args, '--per') ?? 1);
  const top = Number(argValue(args, '--top') ?? 25);
  const from = argValue(args, '--from');
  const to = argValue(args, '--to');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const summary = selfTime(profile, by, {
    fromS: from === undefined ? undefined : Number(from),
    toS: to === undefined ? undefined : Number(to),
  });
  const ms = (value: number) => (value / per).toFixed(per > 1 ? 2 : 0).padStart(9);
  console.log(
    `busy ${ms(summary.busyMs)} ms, idle ${ms(summary.idleMs)} ms${per > 1 ? ` (per 1 of ${per})` : ''}`,
  );
  for (const [group, value] of summary.groups.slice(0, top)) {
    const share = ((100 * value) / summary.busyMs).toFixed(1).padStart(5);
    console.log(`${ms(value)} ${share}%  ${group}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main(process.argv.slice(2));
