/**
 * The docs against the code: the README stays a newcomer's page (short, linking every page of
 * docs/), every relative link of the README and docs/ resolves to a file and a heading, and
 * docs/configuration.md lists every variable config/index.ts reads.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../config/index.js';

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

describe('docs/configuration.md', () => {
  it('has a row for every variable config/index.ts reads', () => {
    const rows = new Set(
      [...read('docs/configuration.md').matchAll(/^\| `([A-Z_]+)`/gm)].map((match) => match[1]),
    );
    expect(CONFIG_VARIABLES.filter((name) => !rows.has(name))).toEqual([]);
  });
});
