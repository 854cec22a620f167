/**
 * The tally and the table of a fault matrix, one module for both matrices: `npm run chaos`
 * (tools/chaos.ts, the embedded stack) and `npm run chaos -- --topology`
 * (environments/topology/fault-matrix.ts). A scenario's body reports its creates; the audit
 * reads what the cluster and the store hold afterwards; the row adds the 5xx answers seen. Pure:
 * each matrix reads its own cluster and store (SQLite or PostgreSQL) and passes the facts here.
 */

/** One row of the table. Counts are of creates unless named otherwise; `seconds` is wall time. */
export interface FaultRow {
  scenario: string;
  runs: number;
  /** Creates that ended as the scenario expects. */
  correct: number;
  /** Not done within the bound, or done with the sandbox still `creating`. */
  stuck: number;
  /** Pods of the scenario's sandboxes whose sandbox is not `running`. */
  leaked: number;
  /** Sandboxes `failed`, `deleted` or `lost` with an `active` execution. */
  unretired: number;
  /** 5xx answers the scenario did not expect. */
  unexpected5xx: number;
  /**
   * 503 `unavailable` answers with `Retry-After` seen while the fault lasted (what a client can
   * act on); absent when the matrix does not count them.
   */
  expected503?: number;
  seconds: number;
}

/** What a scenario's body reports: its creates, how many ended right, how many never ended. */
export interface ScenarioResult {
  runs: number;
  correct: number;
  notDone: number;
  /** The sandboxes of the scenario's creates (the audit looks at these only). */
  sandboxIds: string[];
}

/** What the cluster and the store hold for a scenario's sandboxes after it. */
export interface ScenarioFacts {
  /** The sandbox id label of every pod in the namespace (undefined for a pod without one). */
  podSandboxIds: Array<string | undefined>;
  /** Each sandbox's state in the store (`creating`, `running`, `failed`, …); absent: no row. */
  states: ReadonlyMap<string, string>;
  /** The sandboxes that have an `active` execution in the store. */
  activeExecutions: ReadonlySet<string>;
}

/** The audit's counts (see {@link FaultRow}). */
export interface ScenarioAudit {
  leaked: number;
  unretired: number;
  /** Sandboxes still `creating`: counted as stuck. */
  creating: number;
}

const RETIRED_STATES = new Set(['failed', 'deleted', 'lost']);

/** Counts pods leaked, executions not retired and sandboxes still `creating` among `sandboxIds`. */
export function auditScenario(sandboxIds: readonly string[], facts: ScenarioFacts): ScenarioAudit {
  const ids = new Set(sandboxIds);
  let leaked = 0;
  for (const id of facts.podSandboxIds) {
    if (id !== undefined && ids.has(id) && facts.states.get(id) !== 'running') leaked += 1;
  }
  let unretired = 0;
  let creating = 0;
  for (const id of ids) {
    const state = facts.states.get(id);
    if (state === 'creating') creating += 1;
    if (state !== undefined && RETIRED_STATES.has(state) && facts.activeExecutions.has(id)) {
      unretired += 1;
    }
  }
  return { leaked, unretired, creating };
}

/**
 * The row of one scenario.
 * @param answers the 5xx answers counted while the scenario ran (`expected503` only when the
 *   matrix counts them)
 * @param startedAtMs when the scenario started, epoch ms
 */
export function faultRow(
  scenario: string,
  result: ScenarioResult,
  audit: ScenarioAudit,
  answers: { unexpected5xx: number; expected503?: number },
  startedAtMs: number,
): FaultRow {
  return {
    scenario,
    runs: result.runs,
    correct: result.correct,
    stuck: result.notDone + audit.creating,
    leaked: audit.leaked,
    unretired: audit.unretired,
    unexpected5xx: answers.unexpected5xx,
    ...(answers.expected503 === undefined ? {} : { expected503: answers.expected503 }),
    seconds: Math.round((Date.now() - startedAtMs) / 1000),
  };
}

/**
 * The rows as a Markdown table (the shape of docs/reliability.md and docs/production.md); the
 * `503 + Retry-After` column only when some row counts them.
 */
export function renderFaultTable(rows: readonly FaultRow[]): string {
  const with503 = rows.some((row) => row.expected503 !== undefined);
  const header = [
    'scenario (time)',
    'runs',
    'correct outcomes',
    'stuck',
    'pods leaked',
    'executions not retired',
    'unexpected 5xx',
    ...(with503 ? ['503 + Retry-After'] : []),
  ];
  const lines = rows.map((row) => [
    `${row.scenario} (${row.seconds} s)`,
    String(row.runs),
    `${row.correct} (${((100 * row.correct) / Math.max(1, row.runs)).toFixed(1)} %)`,
    String(row.stuck),
    String(row.leaked),
    String(row.unretired),
    String(row.unexpected5xx),
    ...(with503 ? [String(row.expected503 ?? '')] : []),
  ]);
  const widths = header.map((title, i) =>
    Math.max(title.length, ...lines.map((line) => line[i]!.length)),
  );
  const render = (cells: string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    render(header),
    `| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`,
    ...lines.map(render),
  ].join('\n');
}

/** Whether a row is perfect: every run correct, nothing stuck, leaked, unretired or 5xx. */
export function isPerfect(row: FaultRow): boolean {
  return (
    row.correct === row.runs && row.stuck + row.leaked + row.unretired + row.unexpected5xx === 0
  );
}
