/**
 * The release before this one, checked out beside this checkout: which commit it is (the
 * `RELEASE_BEFORE` file at the repository's root, or the `RELEASE_BEFORE` environment variable),
 * and a `git worktree` of it that can run its worker. Used by the upgrade test
 * (test/upgrade.test.ts) and by tools/record-histories.ts (docs/testing.md, "Upgrades with
 * creates in flight").
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This checkout's root directory. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A checked-out release. */
export interface ReleaseCheckout {
  /** Full commit hash. */
  commit: string;
  /** Its worktree (a temporary directory). */
  dir: string;
  /** How its node_modules came to be: this checkout's (same package-lock.json) or `npm ci`. */
  nodeModules: 'linked' | 'installed';
  /** Removes the worktree (git's record of it too). Idempotent. */
  remove(): void;
}

function git(args: string[], cwd = REPO_ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * The full hash of the release before this one: `RELEASE_BEFORE` from the environment when set
 * (any commit-ish: a hash, a tag, `main~3`), else the first line of the `RELEASE_BEFORE` file
 * that is not a `#` comment.
 * @throws when neither names a commit of this repository
 */
export function releaseBeforeCommit(env: NodeJS.ProcessEnv = process.env): string {
  const named =
    env.RELEASE_BEFORE?.trim() ||
    readFileSync(join(REPO_ROOT, 'RELEASE_BEFORE'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line !== '' && !line.startsWith('#'));
  if (!named) throw new Error('RELEASE_BEFORE names no commit');
  try {
    return git(['rev-parse', '--verify', '--quiet', `${named}^{commit}`]).trim();
  } catch {
    throw new Error(`RELEASE_BEFORE: ${named} is not a commit of this repository`);
  }
}

/**
 * Adds a detached `git worktree` of `commit` in a temporary directory. Its node_modules is a
 * symlink to this checkout's when both package-lock.json files are the same; otherwise
 * `npm ci` installs it there (minutes, and it needs the npm registry).
 * @throws when git or npm fails
 */
export function checkoutRelease(commit: string): ReleaseCheckout {
  const dir = join(mkdtempSync(join(tmpdir(), 'durable-sandbox-release-')), 'checkout');
  git(['worktree', 'add', '--detach', dir, commit]);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    try {
      git(['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(['worktree', 'prune']);
    }
    rmSync(join(dir, '..'), { recursive: true, force: true });
  };
  try {
    const sameLock =
      readFileSync(join(dir, 'package-lock.json'), 'utf8') ===
      readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8');
    if (sameLock && existsSync(join(REPO_ROOT, 'node_modules'))) {
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
      return { commit, dir, nodeModules: 'linked', remove };
    }
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
    return { commit, dir, nodeModules: 'installed', remove };
  } catch (error) {
    remove();
    throw error;
  }
}

/**
 * The histories tools/record-histories.ts records of the release before, by fixture file name
 * (`<name>.history.json`); test/replay.test.ts requires them all. Every branch of the create
 * workflow, the delete's (the next release's worker may meet them mid-flight for minutes to an
 * hour), the lifetime and warm-pool workflows while they wait (they run for days, so they
 * cross every upgrade), and a lifetime that expired (its expiry step as that release ran it).
 */
export const RECORDED_HISTORIES = [
  'create-sandbox-running',
  'create-sandbox-invalid-request',
  'create-sandbox-labels-ttl',
  'create-sandbox-warm-claim',
  'create-sandbox-re-placement',
  'create-sandbox-cancelled',
  'create-sandbox-deadline',
  'create-sandbox-pod-failed',
  'create-sandbox-deleted-while-creating',
  'delete-sandbox-running',
  'delete-sandbox-while-creating',
  'sandbox-lifetime-waiting',
  'sandbox-lifetime-expired',
  'warm-pool-reconciling',
] as const;

/** Where the replay fixtures recorded by `commit` live: test/fixtures/<7 hex digits>. */
export function fixtureDir(commit: string): string {
  return join(REPO_ROOT, 'test', 'fixtures', commit.slice(0, 7));
}

/**
 * `path` (e.g. `src/worker/main.ts`) as it is in `checkout`: as given when the checkout has it,
 * else where it was before the root was grouped (issue 51: the service's folders were at the
 * root, tools/ was scripts/), so a release before that move still runs.
 */
export function pathInCheckout(checkout: string, path: string): string {
  if (existsSync(join(checkout, path))) return path;
  return path.replace(/^src\//, '').replace(/^tools\//, 'scripts/');
}
