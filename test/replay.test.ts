/**
 * Determinism guard: replays workflow histories recorded by earlier releases against today's
 * workflow code. A workflow edit that changes the commands of a history a worker of this release
 * may still meet fails here.
 *
 * test/fixtures/<commit>/ hold histories recorded by an earlier release's own stack
 * (tools/record-histories.ts): every branch of the create workflow, the delete's, and the
 * lifetime and warm-pool workflows mid-flight. Those of the release named by RELEASE_BEFORE must
 * all be there; older releases' directories stay only while the rule of docs/testing.md
 * ("Which histories must replay") says this release's worker may meet them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureDir, RECORDED_HISTORIES, releaseBeforeCommit } from '../tools/release-before.js';
import { startCreate, settle } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';

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

describe('workflow replay (determinism)', () => {
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

  it('has every history recorded by the release before', () => {
    const commit = releaseBeforeCommit();
    const missing = RECORDED_HISTORIES.filter(
      (name) => !existsSync(join(fixtureDir(commit), `${name}.history.json`)),
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
