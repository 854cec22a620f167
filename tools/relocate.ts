/**
 * `npx tsx tools/relocate.ts '[["old","new/place"]]'`: moves folders or files (`git mv`) and
 * rewrites every path that names them: relative import specifiers (and `new URL('..', import.meta.url)` forms) in sources, and
 * cited paths (`api/main.ts`, `workflows/**`, a bare `store/`) in sources, pages, manifests and
 * scripts. Recorded fixtures (test/fixtures/) are left as recorded. Run once per move, on a clean
 * tree; review the diff (docs/architecture.md, "Layout").
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/**
 * Old top-level path -> new path, from the first argument (JSON pairs). The grouping of the root
 * (issue 51) ran it with the service's folders -> src/<name>, client -> clients/typescript,
 * cli -> clients/cli, bin -> clients/cli/bin, examples -> clients/examples, scripts -> tools.
 */
export const MOVES: ReadonlyArray<readonly [string, string]> = JSON.parse(process.argv[2] ?? '[]');

/** The checkout to move in: the working directory. */
const ROOT = process.cwd();

/** `path` (repository-relative) after the moves. */
export function moved(path: string): string {
  for (const [from, to] of MOVES) {
    if (path === from) return to;
    // A moved `.ts` file is imported by its `.js` name (NodeNext module resolution).
    if (from.endsWith('.ts') && path === `${from.slice(0, -3)}.js`) return `${to.slice(0, -3)}.js`;
    if (path.startsWith(`${from}/`)) return to + path.slice(from.length);
  }
  return path;
}

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });
}

const files = git(['ls-files', '--cached', '--others', '--exclude-standard'])
  .split('\n')
  .filter((f) => f !== '' && existsSync(join(ROOT, f)));
/** Every file and folder before the move. */
const before = new Set<string>();
for (const file of files) {
  let path = file;
  while (path !== '.' && path !== '') {
    before.add(path);
    path = dirname(path);
  }
}

const SPECIFIER =
  /((?:from\s+|import\s*\(\s*|import\s+|require\(\s*|new URL\(\s*)(['"]))(\.{1,2}\/[^'"]*|\.\.?)(\2)/g;

/** A Markdown link to a relative path: `](../docs/api.md#errors)`. */
const LINK = /(\]\()()(\.{1,2}\/[^)#\s]*)()/g;

function rewriteSpecifiers(
  text: string,
  oldFile: string,
  newFile: string,
  pattern: RegExp = SPECIFIER,
): string {
  return text.replace(pattern, (whole, head: string, _q, spec: string, tail: string) => {
    const target = normalize(join(dirname(oldFile), spec));
    if (target.startsWith('..')) return whole;
    let next = relative(dirname(newFile), moved(target)) || '.';
    if (!next.startsWith('.')) next = `./${next}`;
    if (spec.endsWith('/') && !next.endsWith('/')) next += '/';
    return next === spec ? whole : `${head}${next}${tail}`;
  });
}

const NOT_OURS = new Set(['config/development-postgres12.yaml', 'config/development.yaml']);

function rewriteCitations(text: string, oldFile: string): string {
  const escaped = (from: string) => from.replace(/[.]/g, '\\.');
  const isFile = (from: string) => /\.\w+$/.test(from);
  const folders = MOVES.filter(([from]) => !isFile(from)).map(([from]) => escaped(from));
  const movedFiles = MOVES.filter(([from]) => isFile(from)).map(([from]) => escaped(from));
  const forms = [
    ...(folders.length > 0 ? [`(?:${folders.join('|')})/[\\w.*/-]*`] : []),
    ...(movedFiles.length > 0 ? [`(?:${movedFiles.join('|')})(?![\\w/-])`] : []),
  ];
  const pattern = new RegExp(`(?<![\\w./@:~$-])(${forms.join('|')})`, 'g');
  return text.replace(pattern, (cited: string) => {
    const path = cited.replace(/[./]+$/, (end) => (end.startsWith('/') ? '/' : ''));
    const bare = path.replace(/\/$/, '');
    if (NOT_OURS.has(bare)) return cited;
    const [top, first] = bare.split('/');
    const own = dirname(oldFile);
    if (own !== '.' && before.has(normalize(join(own, bare)))) return cited;
    const known = first === undefined || first.startsWith('*') || before.has(`${top}/${first}`);
    if (!known) return cited;
    return moved(bare) + cited.slice(bare.length);
  });
}

const TEXT =
  /\.(ts|mts|js|mjs|cjs|json|md|sh|ya?ml|toml|txt|py|cfg|ini)$|(^|\/)(Dockerfile|run|\.gitignore|\.prettierignore|\.dockerignore)$/;

function isText(file: string): boolean {
  return TEXT.test(file) && !file.startsWith('test/fixtures/') && file !== 'package-lock.json';
}

for (const [from, to] of MOVES) {
  if (!existsSync(join(ROOT, from))) continue;
  mkdirSync(dirname(join(ROOT, to)), { recursive: true });
  git(['mv', from, to]);
}
let changed = 0;
for (const oldFile of files) {
  if (!isText(oldFile)) continue;
  const newFile = moved(oldFile);
  const path = join(ROOT, newFile);
  if (!existsSync(path) || statSync(path).isDirectory()) continue;
  const text = readFileSync(path, 'utf8');
  let next = text;
  if (/\.(ts|mts|js|mjs|cjs)$/.test(oldFile)) next = rewriteSpecifiers(next, oldFile, newFile);
  if (oldFile.endsWith('.md')) next = rewriteSpecifiers(next, oldFile, newFile, LINK);
  next = rewriteCitations(next, oldFile);
  if (next !== text) {
    writeFileSync(path, next);
    changed += 1;
  }
}
console.log(`moved ${MOVES.length} paths, rewrote ${changed} files`);
