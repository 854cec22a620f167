/**
 * The topology's supervisor moves a service to a new port only on that service's own failed
 * start for a taken port (environments/topology/index.ts `isPortTakenLine`), never on a log
 * line that quotes the same words. Fast tier.
 */
import { describe, expect, it } from 'vitest';
import { startupFailureLine } from '../src/process/startup-failure.js';
import { isPortTakenLine } from '../environments/topology/index.js';

const taken = new Error('PORT: cannot listen on port 7243 (address in use)');

describe('isPortTakenLine', () => {
  it.each([
    {
      what: 'the plain failed start',
      line: startupFailureLine('api', taken),
      port: 7243,
      moves: true,
    },
    {
      what: "pino's fatal line",
      line: '{"level":60,"time":1,"msg":"PORT: cannot listen on port 7243"}',
      port: 7243,
      moves: true,
    },
    { what: 'another port', line: startupFailureLine('api', taken), port: 7244, moves: false },
    {
      what: 'a log line quoting the words',
      line: '{"level":30,"msg":"request body: cannot listen on port 7243"}',
      port: 7243,
      moves: false,
    },
  ])('$what: $moves', ({ line, port, moves }) => {
    expect(isPortTakenLine(line, port)).toBe(moves);
  });
});
