/**
 * The fault matrices' one tally and table (environments/fault-report.ts), used by `npm run chaos`
 * and `npm run chaos -- --topology`: what counts as leaked, not retired and stuck, and the
 * table's columns.
 */
import { describe, expect, it } from 'vitest';
import {
  auditScenario,
  faultRow,
  isPerfect,
  renderFaultTable,
} from '../environments/fault-report.js';

describe('the fault report', () => {
  it("audits only the scenario's sandboxes: leaked pods, unretired executions, creating", () => {
    const audit = auditScenario(['a', 'b', 'c', 'd'], {
      // a: running with its pod; b: failed, pod left; c: creating; d: failed, still active;
      // x: another scenario's pod; one pod has no label.
      podSandboxIds: ['a', 'b', 'x', undefined],
      states: new Map([
        ['a', 'running'],
        ['b', 'failed'],
        ['c', 'creating'],
        ['d', 'failed'],
        ['x', 'failed'],
      ]),
      activeExecutions: new Set(['a', 'd', 'x']),
    });
    expect(audit).toEqual({ leaked: 1, unretired: 1, creating: 1 });
  });

  it('counts a creating sandbox as stuck, and a row is perfect only with nothing wrong', () => {
    const result = { runs: 2, correct: 2, notDone: 0, sandboxIds: ['a', 'b'] };
    const clean = faultRow(
      's',
      result,
      { leaked: 0, unretired: 0, creating: 0 },
      { unexpected5xx: 0 },
      Date.now(),
    );
    expect(isPerfect(clean)).toBe(true);
    const creating = faultRow(
      's',
      result,
      { leaked: 0, unretired: 0, creating: 1 },
      { unexpected5xx: 0 },
      Date.now(),
    );
    expect(creating.stuck).toBe(1);
    expect(isPerfect(creating)).toBe(false);
    expect(isPerfect({ ...clean, unexpected5xx: 1 })).toBe(false);
    expect(isPerfect({ ...clean, correct: 1 })).toBe(false);
  });

  it('renders the 503 column only for a matrix that counts them', () => {
    const row = faultRow(
      'PostgreSQL outage ×1',
      { runs: 2, correct: 2, notDone: 0, sandboxIds: [] },
      { leaked: 0, unretired: 0, creating: 0 },
      { unexpected5xx: 0, expected503: 7 },
      Date.now(),
    );
    const [header, rule, line] = renderFaultTable([row]).split('\n');
    expect(header).toMatch(
      /^\| scenario \(time\) +\| runs \| correct outcomes \| stuck \| pods leaked \| executions not retired \| unexpected 5xx \| 503 \+ Retry-After \|$/,
    );
    expect(rule).toMatch(/^\| -+ \| -+ \|/);
    expect(line).toMatch(
      /^\| PostgreSQL outage ×1 \(0 s\) +\| 2 +\| 2 \(100\.0 %\) +\| 0 +\| 0 +\| 0 +\| 0 +\| 7 +\|$/,
    );
    const { expected503: _omitted, ...without } = row;
    expect(renderFaultTable([without])).not.toContain('Retry-After');
  });
});
