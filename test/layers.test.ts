/**
 * The tree's groups, each a folder at the root, and the one direction of their imports
 * (docs/architecture.md, "Layout"): the service (src/, with the contract beside it) at the
 * ground; its clients (clients/) and the environments it runs in (environments/) above it, side by
 * side; the tooling (tools/, then test/) on top. The root holds those folders and no other. A file may import its own group and any
 * group on a lower level, never one on its level or above: no folder imports one above it.
 * Inside a group the folders form an order too (the service's, bottom first, in
 * docs/architecture.md "Layout"): their imports make no cycle.
 * Read from every tracked source file's relative imports (`import type` included).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Each group: its level (0 = the ground) and its top-level folders. */
const GROUPS = {
  service: {
    level: 0,
    folders: [
      'contract',
      'src/config',
      'src/process',
      'src/store',
      'src/kubernetes',
      'src/temporal',
      'src/tracing',
      'src/webhooks',
      'src/workflows',
      'src/verdict',
      'src/activities',
      'src/api',
      'src/nexus',
      'src/worker',
    ],
  },
  clients: {
    level: 1,
    folders: ['clients/typescript', 'clients/cli', 'clients/examples', 'clients/python'],
  },
  environments: { level: 1, folders: ['environments'] },
  tools: { level: 2, folders: ['tools'] },
  tests: { level: 3, folders: ['test'] },
} as const;

type Group = keyof typeof GROUPS;

const ROOT = join(import.meta.dirname, '..');

/** Top-level folders that hold no imported code: manifests, docs, CI. */
const NOT_CODE = new Set(['.ci', 'deploy', 'docs']);

/** Root folders whose children are the folders of a group: `src/api`, `clients/cli`. */
const NESTED = new Set(['src', 'clients']);

/** The folder a file belongs to: its top-level folder, or its second level under src/ and clients/. */
function folderOf(file: string): string {
  const [top, second] = file.split('/');
  return NESTED.has(top as string) && second !== undefined ? `${top}/${second}` : (top as string);
}

function groupOf(folder: string): Group | undefined {
  return (Object.keys(GROUPS) as Group[]).find((group) =>
    (GROUPS[group].folders as readonly string[]).includes(folder),
  );
}

/** Every file git tracks or would, under a top-level folder. */
function treeFiles(): string[] {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  }).split('\n');
  return files.filter((file) => file.includes('/'));
}

/** Every source file (TypeScript, JavaScript) under a top-level folder. */
function sourceFiles(): string[] {
  return treeFiles().filter((file) => /\.(ts|mts|mjs|js)$/.test(file));
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
    const from = folderOf(file);
    for (const specifier of relativeImports(readFileSync(join(ROOT, file), 'utf8'))) {
      const target = normalize(join(dirname(file), specifier));
      const to = folderOf(target);
      if (to !== from && !target.startsWith('..')) edges.push({ from, to, file, specifier });
    }
  }
  return edges;
}

type Edge = ReturnType<typeof crossFolderImports>[number];

/**
 * A cycle of folder imports inside one group, as `a → b → … → a` with one file and specifier
 * per edge; undefined when the group's folders form an order (depth-first search).
 */
function folderCycle(edges: Edge[]): string | undefined {
  const out = new Map<string, Map<string, Edge>>();
  for (const edge of edges) {
    const targets = out.get(edge.from) ?? new Map<string, Edge>();
    if (!targets.has(edge.to)) targets.set(edge.to, edge);
    out.set(edge.from, targets);
  }
  const done = new Set<string>();
  const path: Edge[] = [];
  const onPath = new Set<string>();
  const visit = (folder: string): Edge[] | undefined => {
    onPath.add(folder);
    const targets = [...(out.get(folder) ?? new Map<string, Edge>())];
    for (const [to, edge] of targets.sort(([a], [b]) => a.localeCompare(b))) {
      path.push(edge);
      if (onPath.has(to)) return path.slice(path.findIndex((step) => step.from === to));
      if (!done.has(to)) {
        const cycle = visit(to);
        if (cycle) return cycle;
      }
      path.pop();
    }
    onPath.delete(folder);
    done.add(folder);
    return undefined;
  };
  for (const folder of [...out.keys()].sort()) {
    const cycle = done.has(folder) ? undefined : visit(folder);
    if (cycle) {
      const folders = [...cycle.map(({ from }) => from), cycle[0]?.from].join(' → ');
      const steps = cycle.map(
        ({ from, to, file, specifier }) => `  ${from} → ${to}: ${file} imports ${specifier}`,
      );
      return [folders, ...steps].join('\n');
    }
  }
  return undefined;
}

describe('the layers of the tree', () => {
  it('the root shows the groups: no folder at the root but theirs and the non-code ones', () => {
    const roots = new Set(treeFiles().map((file) => file.split('/')[0] as string));
    const groupRoots = new Set(
      Object.values(GROUPS).flatMap(({ folders }) => folders.map((f) => f.split('/')[0])),
    );
    const stray = [...roots].filter((root) => !groupRoots.has(root) && !NOT_CODE.has(root));
    expect(stray).toEqual([]);
    expect([...groupRoots].sort()).toEqual([
      'clients',
      'contract',
      'environments',
      'src',
      'test',
      'tools',
    ]);
  });

  it('every folder with code belongs to one group', () => {
    const folders = new Set(sourceFiles().map(folderOf));
    const unplaced = [...folders].filter((folder) => !groupOf(folder) && !NOT_CODE.has(folder));
    expect(unplaced).toEqual([]);
  });

  it('imports run only downhill: no folder imports a group on its level or above', () => {
    const edges = crossFolderImports();
    expect(edges.length).toBeGreaterThan(100); // the scan reads the tree's imports
    const uphill = edges
      .filter(({ from, to }) => {
        const a = groupOf(from);
        const b = groupOf(to);
        if (!a || !b || a === b) return false;
        return GROUPS[b].level >= GROUPS[a].level;
      })
      .map(({ file, specifier }) => `${file} imports ${specifier}`);
    expect(uphill).toEqual([]);
  });

  it('inside each group the folders form an order: their imports make no cycle', () => {
    const edges = crossFolderImports();
    const inService = edges.filter(
      ({ from, to }) => groupOf(from) === 'service' && groupOf(to) === 'service',
    );
    expect(inService.length).toBeGreaterThan(100); // the scan reads the service's folder imports
    const cycles = (Object.keys(GROUPS) as Group[]).flatMap((group) => {
      const inside = edges.filter(
        ({ from, to }) => groupOf(from) === group && groupOf(to) === group,
      );
      const cycle = folderCycle(inside);
      return cycle ? [`${group}: ${cycle}`] : [];
    });
    expect(cycles, `a folder imports one above it:\n${cycles.join('\n')}`).toEqual([]);
  });
});
