/**
 * Determinism guard: replays workflow histories recorded from real creates against today's
 * workflow code. A workflow edit that changes the commands of an existing history fails here.
 *
 * The fixtures in test/fixtures/ were recorded from real runs on the dev server; re-record them
 * (only on purpose, e.g. after a versioned change) with `RECORD_HISTORY=1 npx vitest run test/replay.test.ts`,
 * or one of them with `RECORD_HISTORY=<file name>`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCreate, settle } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';

const FIXTURES = {
  invalidRequest: 'create-sandbox-invalid-request.history.json',
  running: 'create-sandbox-running.history.json',
  // Recorded with the asynchronous readiness wait (patch `async-readiness-wait`).
  asyncInvalidRequest: 'create-sandbox-async-invalid-request.history.json',
  asyncRunning: 'create-sandbox-async-running.history.json',
} as const;

function fixturePath(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

describe('createSandbox replay (determinism)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  async function recordHistory(diskMib: number): Promise<string> {
    const { handle } = await startCreate(stack, { diskMib });
    await settle(handle.result());
    return historyToJSON(await handle.fetchHistory());
  }

  it.each(Object.entries(FIXTURES))('replays the committed %s history', async (_label, file) => {
    if (process.env.RECORD_HISTORY === '1' || process.env.RECORD_HISTORY === file) {
      writeFileSync(fixturePath(file), await recordHistory(file.includes('invalid') ? 300 : 2048));
    }
    const history = historyFromJSON(JSON.parse(readFileSync(fixturePath(file), 'utf8')));
    expect(history.events?.length).toBeGreaterThan(5);
    await Worker.runReplayHistory({ workflowBundle: stack.temporal.workflowBundle }, history);
  });

  it('replays a history recorded now from a refused create', async () => {
    const history = historyFromJSON(JSON.parse(await recordHistory(300)));
    await Worker.runReplayHistory({ workflowBundle: stack.temporal.workflowBundle }, history);
  });
});
