/**
 * The arithmetic of `npm run bench -- cpu` (tools/bench/floor-cpu.ts, tools/bench/cpu-table.ts):
 * CPU per operation less the idle rate, and the table's ratio to the floor. Pure functions.
 */
import { describe, expect, it } from 'vitest';
import { perOperationMs } from '../tools/bench/floor-cpu.js';
import { cpuTable, ratioToFloor, type CpuRow } from '../tools/bench/cpu-table.js';

const row = (stack: number, floor: number): CpuRow => ({
  stack,
  api: 10,
  worker: 20,
  temporal: 30,
  floor,
  floorTemporal: 25,
});

describe('CPU per operation', () => {
  it("subtracts the idle rate over the burst's wall time and divides by the operations", () => {
    // idle 30 ms over 3,000 ms = 0.01 ms/ms; burst 2,000 ms used 1,020 ms, 20 of them idle.
    const readings = { idleCpuMs: 30, idleMs: 3_000, burstCpuMs: 1_020, burstMs: 2_000 };
    expect(perOperationMs(readings, 20)).toBe(50);
  });

  it('is NaN when a process is gone', () => {
    const readings = { idleCpuMs: 30, idleMs: 3_000, burstCpuMs: NaN, burstMs: 2_000 };
    expect(perOperationMs(readings, 20)).toBeNaN();
  });
});

describe('the CPU table', () => {
  it('passes at 1.5x the floor and misses above it', () => {
    const [, , cold, refused] = cpuTable({
      cold_create: row(36, 24),
      refused_create: row(36.3, 24),
    });
    expect(cold).toBe('| cold_create | 36.0 | 10.0 | 20.0 | 30.0 | 24.0 | 25.0 | 1.50x PASS |');
    expect(refused).toBe(
      '| refused_create | 36.3 | 10.0 | 20.0 | 30.0 | 24.0 | 25.0 | 1.51x MISS |',
    );
  });

  it('says which operations were not measured and judges no ratio without a floor', () => {
    const lines = cpuTable({ delete: row(40, NaN) });
    expect(lines.find((l) => l.startsWith('| expiry'))).toContain('not measured');
    expect(lines.find((l) => l.startsWith('| delete'))).toMatch(/\| n\/a \| 25\.0 \| n\/a \|$/);
  });

  it('rounds the ratio to 0.01', () => {
    expect(ratioToFloor(60, 24)).toBe(2.5);
    expect(ratioToFloor(10, 3)).toBe(3.33);
    expect(ratioToFloor(10, 0)).toBeNaN();
  });
});
