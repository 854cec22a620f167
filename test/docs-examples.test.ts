/**
 * Docs that run (docs/testing.md): every `$ ` example of README.md and docs/*.md runs against
 * the embedded stack (`npm start`'s script on free ports), page by page in the order a reader
 * follows them (the README first, its steps 1-3 in order, then docs/ by name), each command in
 * bash from the repository's root, and its output must match what the page shows
 * (test/support/output-match.ts). A block marked `<!-- doctest: skip (why) -->` is counted, not
 * run. The examples' placeholders are set as the pages say: `localhost:8080` is the stack's API,
 * `127.0.0.1:7233` its Temporal frontend, `$TOKEN` tenant acme's token, `$OPERATOR_TOKEN` an
 * operator's ({@link DOCTEST_ENV}).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractExamples, type DocExample } from './support/doc-examples.js';
import { cleanOutput, outputMismatch } from './support/output-match.js';
import { startStackProcess, type StackProcess } from './support/stack-process.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The pages, in the order a reader follows them: the README, then docs/ by name. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/**
 * What the stack runs with beyond `npm start`'s defaults, as the pages' examples state it:
 * an operator (api.md, "Operator routes"), the `TENANT_LIMITS` example of configuration.md
 * (cli.md's `quota`) with a second tenant `acme` allowed one sandbox at once (api.md, "Tenant
 * limits"), `base` with a warm pool of size 0 (api.md's scale example), and the Nexus caller's
 * namespace mapped to `dev` (nexus.md, "The sample caller").
 */
const DOCTEST_ENV = {
  API_TOKENS: 'dev:dev-token,acme:acme-token',
  ADMIN_TOKENS: 'operator:operator-token',
  TENANT_LIMITS: JSON.stringify({
    default: {
      sandboxes: 20,
      cpu: 40,
      memory_mib: 81920,
      disk_mib: 409600,
      creates_per_second: 5,
      create_burst: 10,
      waits: 100,
    },
    tenants: { acme: { sandboxes: 1 } },
  }),
  SANDBOX_TEMPLATES: JSON.stringify({
    base: {
      image: 'ghcr.io/durable-sandbox/base:1',
      warm_pool: { size: 0, resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 } },
    },
  }),
  NEXUS_TENANTS: 'nexus-caller:dev',
};

/** How long one command may run before it counts as hung, ms. */
const COMMAND_TIMEOUT_MS = 120_000;

const examples: DocExample[] = PAGES.flatMap((page) =>
  extractExamples(readFileSync(join(ROOT, page), 'utf8'), page),
);
let stack: StackProcess;
let dataDir: string;
/**
 * npm's cache for the examples' commands, fresh each run, as on a new user's machine: `npx
 * durable-sandbox` installs this checkout into npm's npx cache under a key made from the
 * checkout's path, and does not link the bin again when package.json's `bin` moves, so a clone
 * at a path an older checkout once used would run (and miss) that checkout's bin.
 */
let npmCache: string;
/** The pages' addresses, rewritten to the stack's. */
let rewrites: Array<[string, string]> = [];
let ran = 0;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-docs-'));
  npmCache = mkdtempSync(join(tmpdir(), 'durable-sandbox-docs-npm-'));
  stack = await startStackProcess({ ...DOCTEST_ENV, DATA_DIR: dataDir });
  const banner = stack.output();
  const temporal = /Temporal:\s+(\S+),/.exec(banner)?.[1];
  const ui = /Temporal UI:\s+(http:\/\/\S+)/.exec(banner)?.[1];
  expect(temporal && ui, banner).toBeTruthy();
  const api = stack.apiUrl.replace('http://', '');
  rewrites = [
    ['localhost:8080', api],
    ['127.0.0.1:8080', api],
    ['127.0.0.1:7233', temporal!],
    ['http://127.0.0.1:8233', ui!],
  ];
}, 300_000);

afterAll(async () => {
  const skipped = examples.filter((e) => e.skip).flatMap((e) => e.commands).length;
  const all = examples.flatMap((e) => e.commands).length;
  console.log(`docs examples: ${ran} ran, ${skipped} marked not runnable, of ${all}`);
  if (stack?.child.exitCode === null) {
    // A Ctrl-C, as a user stops it; whatever is left after 30 s is killed.
    const stopped = await Promise.race([
      stack.interrupt().then(() => true),
      new Promise<false>((resolveLater) => setTimeout(() => resolveLater(false), 30_000)),
    ]);
    if (!stopped) stack.kill();
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(npmCache, { recursive: true, force: true });
}, 60_000);

function rewrite(text: string): string {
  return rewrites.reduce((out, [from, to]) => out.split(from).join(to), text);
}

/**
 * Runs one command as a terminal would (stdout and stderr in one stream, in order), with `$?`
 * the previous command's exit code.
 */
function run(command: string, previousCode: number): Promise<{ code: number; output: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn('bash', ['-c', `exec 2>&1\n(exit ${previousCode})\n${command}`], {
      cwd: ROOT,
      detached: true, // its own process group, ended whole on a timeout
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DURABLE_SANDBOX_URL: stack.apiUrl,
        DURABLE_SANDBOX_TOKEN: 'dev-token',
        TOKEN: 'acme-token',
        OPERATOR_TOKEN: 'operator-token',
        NO_COLOR: '1',
        npm_config_cache: npmCache,
      },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n(killed after ${COMMAND_TIMEOUT_MS} ms)`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, COMMAND_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code: code ?? 1, output });
    });
  });
}

describe('the examples of README.md and docs/ print what the pages show', () => {
  it('finds the README examples (its three steps) among them', () => {
    expect(examples.filter((e) => e.file === 'README.md' && !e.skip).length).toBeGreaterThanOrEqual(
      3,
    );
  });

  const pages = PAGES.filter((page) => examples.some((e) => e.file === page && !e.skip));
  it.each(pages)(
    '%s',
    async (page) => {
      const failures: string[] = [];
      let previousCode = 0;
      for (const example of examples.filter((e) => e.file === page && !e.skip)) {
        for (const { command, expected, line } of example.commands) {
          const result = await run(rewrite(command), previousCode);
          previousCode = result.code;
          ran++;
          const mismatch = outputMismatch(expected.map(rewrite), result.output);
          if (mismatch) {
            failures.push(
              `${page}:${line}: $ ${command}\n  ${mismatch}\n  it printed (exit ${result.code}):\n` +
                cleanOutput(result.output)
                  .split('\n')
                  .map((l) => `    ${l}`)
                  .join('\n'),
            );
          }
        }
      }
      expect(failures.length, failures.join('\n\n')).toBe(0);
    },
    600_000,
  );
});
