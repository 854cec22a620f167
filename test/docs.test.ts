/**
 * The docs against the code: the README stays a newcomer's page (short, linking every page of
 * docs/), every relative link of the README and docs/ resolves to a file and a heading, and
 * docs/configuration.md lists every variable src/config/index.ts reads.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../src/config/index.js';
import { OPERATION_ERRORS, POD_LOST } from '../contract/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const DOC_PAGES = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const MARKDOWN = ['README.md', ...DOC_PAGES];

/** A heading's anchor as GitHub spells it: lower case, punctuation dropped, spaces to '-'. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = read(file).replace(/^( {4}|```).*$/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

/** The relative links of a Markdown file, outside code: `[text](target)`. */
function linksOf(file: string): string[] {
  const text = read(file)
    .replace(/^ {4}.*$/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z]+:/.test(target));
}

describe('README', () => {
  it('links every page of docs/', () => {
    const links = new Set(linksOf('README.md').map((target) => target.split('#')[0]));
    expect(DOC_PAGES.filter((page) => !links.has(page))).toEqual([]);
  });

  it('reads in five minutes (at most 1,250 words, code included)', () => {
    const words = read('README.md').split(/\s+/).filter(Boolean).length;
    expect(words).toBeLessThanOrEqual(1250);
  });
});

describe('links of the README and docs/', () => {
  it.each(MARKDOWN)('%s: every relative link names a file and a heading that exist', (file) => {
    const broken = linksOf(file).filter((target) => {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const linked = path === '' ? file : join(dirname(file), path);
      if (!existsSync(join(ROOT, linked))) return true;
      return anchor !== undefined && linked.endsWith('.md') && !anchorsOf(linked).has(anchor);
    });
    expect(broken).toEqual([]);
  });
});

describe('sections named in text', () => {
  // `README ("Metrics and logs")`, `api.md, "Errors"`, `[architecture.md](…) ("Compensation")`
  const REFERENCE =
    /(README(?:\.md)?|(?:docs\/)?[a-z-]+\.md)\]?(?:\([^)\s]*\))?,? \(?"([^"\n]{3,80})"/g;
  it.each(MARKDOWN)('%s: every section it names by title exists in that page', (file) => {
    const text = read(file).replace(/^ {4}.*$/gm, '');
    const missing = [...text.matchAll(REFERENCE)]
      .map(([, page, title]) => {
        const linked = page!.startsWith('README')
          ? 'README.md'
          : page!.startsWith('docs/')
            ? page!
            : join(dirname(file), page!);
        return { linked, title: title! };
      })
      .filter(({ linked }) => existsSync(join(ROOT, linked)))
      .filter(({ linked, title }) => !anchorsOf(linked).has(anchorOf(title)))
      .map(({ linked, title }) => `${linked}: "${title}"`);
    expect(missing).toEqual([]);
  });
});

/** Source folders of the service and its scripts (not test/, not tools/bench: its variables are docs/benchmarks.md's). */
const SOURCE_DIRS = ['src', 'contract', 'clients/cli', 'environments', 'tools'];
/** Variables of the operating system, not of this service. */
const SYSTEM_VARIABLES = new Set(['PATH', 'XDG_CACHE_HOME']);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return path === 'tools/bench' ? [] : sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

/** Every environment variable the code reads: `env.NAME`, `env['NAME']`, and `envVar: 'NAME'`. */
function variablesReadInCode(): string[] {
  const names = new Set<string>(CONFIG_VARIABLES);
  for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
    const text = read(file);
    for (const match of text.matchAll(/\benv(?:\.|\[['"])([A-Z][A-Z0-9_]+)/g)) names.add(match[1]!);
    for (const match of text.matchAll(/\benvVar: '([A-Z][A-Z0-9_]+)'/g)) names.add(match[1]!);
  }
  return [...names].filter((name) => !SYSTEM_VARIABLES.has(name)).sort();
}

describe('docs/configuration.md', () => {
  const rows = new Set(
    [...read('docs/configuration.md').matchAll(/^\| ([^|]+)\|/gm)].flatMap((match) =>
      [...match[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((name) => name[1]),
    ),
  );

  it('has a row for every variable src/config/index.ts reads', () => {
    expect(CONFIG_VARIABLES.filter((name) => !rows.has(name))).toEqual([]);
  });

  it('has a row for every environment variable the code reads (process.env anywhere)', () => {
    const read = variablesReadInCode();
    expect(read).toEqual(expect.arrayContaining(['LOG_FORMAT', 'TEMPORAL_CLI']));
    expect(read.filter((name) => !rows.has(name))).toEqual([]);
  });
});

describe('docs/cli.md', () => {
  it("lists every command of the CLI's program (its --help)", async () => {
    const { run } = await import('../clients/cli/program.js');
    let help = '';
    const out = { write: (chunk: string) => ((help += chunk), true) };
    await run(['--help'], { stdout: out as never, stderr: out as never, env: {} });
    const commands = [...help.matchAll(/^ {2}([a-z][a-z-]+)(?= |$)/gm)]
      .map((match) => match[1]!)
      .filter((name) => name !== 'help');
    expect(commands).toEqual(expect.arrayContaining(['create', 'trace', 'templates']));
    const page = read('docs/cli.md');
    expect(commands.filter((name) => !page.includes(`durable-sandbox ${name}`))).toEqual([]);
  });
});

/** The failure codes of contract/: every operation error code, and a lost sandbox's. */
const FAILURE_CODES = [...Object.keys(OPERATION_ERRORS), POD_LOST];

describe('README', () => {
  it('names every failure code of contract/ (OPERATION_ERRORS and POD_LOST)', () => {
    const readme = read('README.md');
    expect(FAILURE_CODES.filter((code) => !readme.includes(`\`${code}\``))).toEqual([]);
  });
});

describe('failure codes in docs/api.md and src/api/openapi.json', () => {
  it('the "Errors" table of docs/api.md has one row per failure code of contract/, no other', () => {
    const section = read('docs/api.md')
      .split(/^## Errors$/m)[1]!
      .split(/^## /m)[0]!;
    const rows = [...section.matchAll(/^\| `([a-z_]+)` +\|/gm)].map((match) => match[1]);
    expect(rows.sort()).toEqual([...FAILURE_CODES].sort());
  });

  it("the OpenAPI document's operation error and sandbox failure codes are contract/'s", () => {
    const schemas = (
      JSON.parse(read('src/api/openapi.json')) as {
        components: { schemas: Record<string, Record<string, unknown>> };
      }
    ).components.schemas;
    const codes = (schema: unknown) => [...((schema as { enum: string[] }).enum ?? [])].sort();
    const operationError = schemas.OperationError as { properties: { code: unknown } };
    expect(codes(operationError.properties.code)).toEqual(Object.keys(OPERATION_ERRORS).sort());
    const failure = (
      schemas.Sandbox as {
        properties: { failure: { oneOf: Array<{ properties?: { code: unknown } }> } };
      }
    ).properties.failure.oneOf.find((branch) => branch.properties)!;
    expect(codes(failure.properties!.code)).toEqual([...FAILURE_CODES].sort());
  });
});

describe('docs/testing.md, "Patch exit plan"', () => {
  /** The plan's rows: constant, id, and whether the call was removed (last cell `yes`). */
  function planRows(): Array<{ name: string; id: string; removed: boolean }> {
    const plan = read('docs/testing.md')
      .split(/^### Patch exit plan$/m)[1]!
      .split(/^### /m)[0]!;
    return [...plan.matchAll(/^\| `([A-Z_]+_PATCH)` +\| `([a-z-]+)` +\|(.*)$/gm)].map((m) => ({
      name: m[1]!,
      id: m[2]!,
      removed: m[3]!.split('|').at(-2)!.trim() === 'yes',
    }));
  }

  it('has a row for every patch constant of src/workflows/, and no patch reuses a removed id', () => {
    const rows = planRows();
    expect(rows.length, 'the plan table lost its rows (or this parser its match)').toBeGreaterThan(
      0,
    );
    const constants = sourceFiles('src/workflows').flatMap((file) =>
      [...read(file).matchAll(/export const ([A-Z_]+_PATCH) = '([^']+)'/g)].map((m) => ({
        name: m[1]!,
        id: m[2]!,
      })),
    );
    const live = rows.filter((row) => !row.removed);
    expect(
      constants.filter((c) => !live.some((row) => row.name === c.name && row.id === c.id)),
    ).toEqual([]);
    expect(live.filter((row) => !constants.some((c) => c.name === row.name))).toEqual([]);
    const removedIds = new Set(rows.filter((row) => row.removed).map((row) => row.id));
    expect(constants.filter((c) => removedIds.has(c.id))).toEqual([]);
  });
});
