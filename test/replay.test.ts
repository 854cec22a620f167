/**
 * Determinism guard: replays workflow histories recorded from real creates against today's
 * workflow code. A workflow edit that changes the commands of an existing history fails here.
 *
 * The fixtures in test/fixtures/ were recorded from real runs on the dev server; re-record them
 * (only on purpose, e.g. after a versioned change) with `RECORD_HISTORY=1 npx vitest run test/replay.test.ts`,
 * or one of them with `RECORD_HISTORY=<file name>`.
 *
 * test/fixtures/<commit>/ hold histories recorded by an earlier release's own stack
 * (tools/record-histories.ts), one per branch of the create workflow; those of the release
 * named by RELEASE_BEFORE must all be there (docs/testing.md, "Upgrades with creates in flight").
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureDir, RECORDED_BRANCHES, releaseBeforeCommit } from '../tools/release-before.js';
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

/** Every history recorded by an earlier release: `<commit>/<file>` under test/fixtures/. */
function releaseFixtures(): string[] {
  const root = fixturePath('');
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((dir) =>
      readdirSync(join(root, dir.name))
        .filter((file) => file.endsWith('.history.json'))
        .map((file) => `${dir.name}/${file}`),
    );
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

  it('has a history of every branch recorded by the release before', () => {
    const commit = releaseBeforeCommit();
    const missing = RECORDED_BRANCHES.filter(
      (branch) => !existsSync(join(fixtureDir(commit), `create-sandbox-${branch}.history.json`)),
    );
    expect(
      missing,
      `record them with \`npx tsx tools/record-histories.ts\` (RELEASE_BEFORE is ${commit})`,
    ).toEqual([]);
  });

  it.each(releaseFixtures())('replays %s, recorded by that release', async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(fixturePath(file), 'utf8')));
    expect(history.events?.length).toBeGreaterThan(5);
    await Worker.runReplayHistory({ workflowBundle: stack.temporal.workflowBundle }, history);
  });

  it('replays a history recorded now from a refused create', async () => {
    const history = historyFromJSON(JSON.parse(await recordHistory(300)));
    await Worker.runReplayHistory({ workflowBundle: stack.temporal.workflowBundle }, history);
  });
});
