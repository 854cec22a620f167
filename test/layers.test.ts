/**
 * The tree's four groups and the one direction of their imports (docs/architecture.md,
 * "Layout"): the service at the ground; its clients and the environments it runs in above it,
 * side by side; the tooling (scripts/, then test/) on top. A file may import its own group and any
 * group on a lower floor, never one on its floor or above: no folder imports one above it.
 * Read from every tracked source file's relative imports.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Each group: its floor (0 = the ground) and its top-level folders. */
const GROUPS = {
  service: {
    floor: 0,
    folders: [
      'contract',
      'config',
      'store',
      'kubernetes',
      'temporal',
      'tracing',
      'webhooks',
      'workflows',
      'activities',
      'api',
      'nexus',
      'worker',
    ],
  },
  clients: { floor: 1, folders: ['client', 'cli', 'bin', 'examples'] },
  environments: { floor: 1, folders: ['environments'] },
  scripts: { floor: 2, folders: ['scripts'] },
  tests: { floor: 3, folders: ['test'] },
} as const;

type Group = keyof typeof GROUPS;

const ROOT = join(import.meta.dirname, '..');

/** Top-level folders that hold no imported code: manifests, docs, CI. */
const NOT_CODE = new Set(['.ci', 'deploy', 'docs']);

function groupOf(folder: string): Group | undefined {
  return (Object.keys(GROUPS) as Group[]).find((group) =>
    (GROUPS[group].folders as readonly string[]).includes(folder),
  );
}

/** Every source file git tracks or would (TypeScript, JavaScript) under a top-level folder. */
function sourceFiles(): string[] {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  }).split('\n');
  return files.filter((file) => /\.(ts|mts|mjs|js)$/.test(file) && file.includes('/'));
}

/** The relative module specifiers a file imports or re-exports (static and dynamic). */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g;
  for (const match of source.matchAll(pattern)) if (match[1]) found.push(match[1]);
  return found;
}

/** Every import across top-level folders: importer folder, imported folder, file, specifier. */
function crossFolderImports() {
  const edges: Array<{ from: string; to: string; file: string; specifier: string }> = [];
  for (const file of sourceFiles()) {
    const from = file.split('/')[0] as string;
    for (const specifier of relativeImports(readFileSync(join(ROOT, file), 'utf8'))) {
      const target = normalize(join(dirname(file), specifier));
      const to = target.split('/')[0] as string;
      if (to !== from && !target.startsWith('..')) edges.push({ from, to, file, specifier });
    }
  }
  return edges;
}

describe('the layers of the tree', () => {
  it('every top-level folder with code belongs to one group', () => {
    const folders = new Set(sourceFiles().map((file) => file.split('/')[0] as string));
    const unplaced = [...folders].filter((folder) => !groupOf(folder) && !NOT_CODE.has(folder));
    expect(unplaced).toEqual([]);
  });

  it('imports run only downhill: no folder imports a group on its floor or above', () => {
    const edges = crossFolderImports();
    expect(edges.length).toBeGreaterThan(100); // the scan reads the tree's imports
    const uphill = edges
      .filter(({ from, to }) => {
        const a = groupOf(from);
        const b = groupOf(to);
        if (!a || !b || a === b) return false;
        return GROUPS[b].floor >= GROUPS[a].floor;
      })
      .map(({ file, specifier }) => `${file} imports ${specifier}`);
    expect(uphill).toEqual([]);
  });
});
