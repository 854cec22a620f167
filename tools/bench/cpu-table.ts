/**
 * The table of `npm run bench -- cpu` (tools/bench/cpu.ts; issue 50): per operation, its CPU
 * in ms per operation in each process beside the floor of its Temporal shape, and the ratio the
 * issue's goal bounds (stack process / floor, goal <= 1.5x). Pure: no servers.
 */

/** The operations measured, in the table's order. */
export const CPU_OPERATIONS = [
  'cold_create',
  'refused_create',
  'warm_claim',
  'delete',
  'expiry',
] as const;

/** One of {@link CPU_OPERATIONS}. */
export type CpuOperation = (typeof CPU_OPERATIONS)[number];

/** The no-op workflow of each operation's Temporal shape (tools/bench/floor-workflows.ts). */
export const FLOOR_OF: Record<CpuOperation, string> = {
  cold_create: 'floorCreateSuccessShape',
  refused_create: 'floorRefusalShape',
  warm_claim: 'floorWarmClaimShape',
  delete: 'floorDeleteShape',
  expiry: 'floorExpiryShape',
};

/** One operation's CPU per operation, ms; NaN when not measured. */
export interface CpuRow {
  /** The embedded stack's one process (API, worker and simulated cluster). */
  stack: number;
  /** The API process of the production shape (API and worker apart). */
  api: number;
  /** The worker process of the production shape. */
  worker: number;
  /** The Temporal dev server (its process tree) under the production shape. */
  temporal: number;
  /** The no-op workflow of the same shape: its worker and client (the bench's process). */
  floor: number;
  /** The Temporal dev server under the no-op workflow. */
  floorTemporal: number;
}

/** The goal on stack / floor (issue 50, "Done when"). */
export const CPU_RATIO_GOAL = 1.5;

/** `value / floor` rounded to 0.01; NaN when either is not a positive finite number. */
export function ratioToFloor(value: number, floor: number): number {
  if (!(value > 0) || !(floor > 0) || !Number.isFinite(value) || !Number.isFinite(floor))
    return NaN;
  return Math.round((value / floor) * 100) / 100;
}

const cell = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(1) : 'n/a');

/**
 * The markdown table of one checkout: operation | stack | API | worker | Temporal server |
 * floor of the shape | floor's Temporal server | stack / floor (with the goal's verdict).
 */
export function cpuTable(rows: Partial<Record<CpuOperation, CpuRow>>): string[] {
  const lines = [
    '| operation | stack ms CPU/op | API | worker | Temporal server | floor of the shape | floor: Temporal server | ratio (stack / floor) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const operation of CPU_OPERATIONS) {
    const row = rows[operation];
    if (!row) {
      lines.push(`| ${operation} | n/a | n/a | n/a | n/a | n/a | n/a | not measured |`);
      continue;
    }
    const ratio = ratioToFloor(row.stack, row.floor);
    const verdict = Number.isNaN(ratio)
      ? 'n/a'
      : `${ratio.toFixed(2)}x ${ratio <= CPU_RATIO_GOAL ? 'PASS' : 'MISS'}`;
    const cells = [row.stack, row.api, row.worker, row.temporal, row.floor, row.floorTemporal];
    lines.push(`| ${operation} | ${cells.map(cell).join(' | ')} | ${verdict} |`);
  }
  return lines;
}
