/**
 * Every path the tree cites resolves: a path such as `src/verdict/refusal.ts` or `docs/api.md`,
 * written in a tracked source file or page (comments included), names a file or folder that
 * exists, from the root or from the citing file's folder. A move that forgets a citation (a
 * comment that still names a moved file's old folder) fails here. Read from git's file list; no
 * servers.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

/**
 * Paths cited on purpose that are not this tree's: the Temporal server module's own config
 * files, which environments/temporal-tier/launcher.ts reads from the module.
 */
const NOT_OURS = new Set(['config/development-postgres12.yaml', 'config/development.yaml']);

/** Tracked and untracked-but-not-ignored files, as git lists them. */
function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file !== '' && existsSync(join(ROOT, file)));
}

/** The files whose text cites paths: sources, pages, and scripts (recorded fixtures aside). */
function citingFiles(files: string[]): string[] {
  return files.filter(
    (file) => /\.(ts|mts|js|mjs|md|sh|yaml|yml)$/.test(file) && !file.startsWith('test/fixtures/'),
  );
}

/**
 * The paths `text` cites that start with one of `folders` and end in a file extension, e.g.
 * `src/store/create-outcome.ts` (not URLs, not a longer path's tail, not a module specifier's
 * `../` form, which test/layers.test.ts and the compiler check).
 */
function citedPaths(text: string, folders: string[]): string[] {
  const pattern = new RegExp(
    `(?<![\\w./@:-])((?:${folders.join('|')})/[\\w./-]*\\w\\.(?:ts|md|json|yaml|sh|go|py))\\b`,
    'g',
  );
  return [...text.matchAll(pattern)].map((match) => match[1] as string);
}

describe('cited paths', () => {
  it('every path a source file or page cites names a file that exists', () => {
    const files = trackedFiles();
    const folders = [...new Set(files.filter((f) => f.includes('/')).map((f) => f.split('/')[0]!))]
      .filter((folder) => /^[\w-]+$/.test(folder))
      .sort();
    const citing = citingFiles(files);
    expect(citing.length, 'the scan reads the tree').toBeGreaterThan(200);
    let cited = 0;
    const broken: string[] = [];
    for (const file of citing) {
      for (const path of citedPaths(readFileSync(join(ROOT, file), 'utf8'), folders)) {
        cited += 1;
        if (NOT_OURS.has(path)) continue;
        if (existsSync(join(ROOT, path)) || existsSync(join(ROOT, dirname(file), path))) continue;
        broken.push(`${file} cites ${path}`);
      }
    }
    expect(cited, 'the scan finds citations').toBeGreaterThan(500);
    expect([...new Set(broken)]).toEqual([]);
  });
});
