/**
 * The promises a create makes in the workflow sandbox stay within what issue 50 cut them to: the
 * SDK captures a stack trace for every one (tools/bench/workflow-promise-count.ts), so an `async`
 * wrapper or a cancellation scope added to the create path costs every create CPU. Replays the
 * release before's histories of a refused create, a cold create that succeeds and a warm claim
 * (test/fixtures/<RELEASE_BEFORE>/) with the run's workflow bundle, in this thread, and counts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { promisesOfReplay } from '../tools/bench/workflow-promise-count.js';
import { fixtureDir, releaseBeforeCommit } from '../tools/release-before.js';

/**
 * Per create kind: its fixture and the most promises it may make (measured with
 * `npx tsx tools/bench/workflow-promises.ts` after issue 50: before it, 66, 52 and 41).
 */
const BUDGETS = [
  { kind: 'a refused create', fixture: 'create-sandbox-invalid-request', most: 57 },
  { kind: 'a cold create', fixture: 'create-sandbox-running', most: 47 },
  { kind: 'a warm claim', fixture: 'create-sandbox-warm-claim', most: 38 },
];

describe('promises per create in the workflow sandbox', () => {
  beforeAll(() => {
    try {
      // The replay worker's state lines are noise here; a failed replay throws.
      Runtime.install({ logger: new DefaultLogger('ERROR') });
    } catch {
      // A Runtime was already installed in this process; keep it.
    }
  });

  it.each(BUDGETS)('$kind makes at most $most promises', async ({ fixture, most }) => {
    const file = join(fixtureDir(releaseBeforeCommit()), `${fixture}.history.json`);
    const history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
    const count = await promisesOfReplay({ codePath: inject('workflowBundlePath') }, history);
    expect(count, `${fixture} replayed with ${count} promises in the workflow`).toBeLessThanOrEqual(
      most,
    );
  });
});
