/**
 * The TypeScript client installs as its README says (issue 53): `npm pack` of clients/typescript/, installed
 * into an empty project with npm, then a plain `node` script (no tsx) creates a sandbox against
 * the running API and the package's types check a TypeScript caller (tsc, no repository paths).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiStack, type ApiStack } from './support/api.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** The folder the client README's install line packs: `(cd <folder> && npm pack …)`. */
function packFolderOfReadme(): string {
  const readme = readFileSync(join(ROOT, 'clients/typescript/README.md'), 'utf8');
  const folder = /\(cd ([\w./-]+) && npm pack\b/.exec(readme)?.[1];
  expect(folder, 'the README has an install line that packs the client').toBeDefined();
  return folder as string;
}

let api: ApiStack;
let url: string;
let work: string;
let app: string;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 50 } } });
  ({ url } = await api.listen());
  work = await mkdtemp(join(tmpdir(), 'durable-sandbox-client-install-'));
  // What the repository builds, packed where the README's install line packs it (prepack
  // compiles dist/): a moved folder the line still names fails here, not on a reader's machine.
  await run(NPM, ['pack', '--pack-destination', work], { cwd: join(ROOT, packFolderOfReadme()) });
  const [tarball] = (await readdir(work)).filter((name) => name.endsWith('.tgz'));
  expect(tarball, 'npm pack wrote no tarball').toBeDefined();
  // An empty project that knows nothing of the repository.
  app = join(work, 'app');
  await mkdir(app);
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: 'app', private: true, type: 'module' }),
  );
  await run(
    NPM,
    ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, tarball as string)],
    { cwd: app },
  );
}, 300_000);
afterAll(async () => {
  await api?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the client package, installed from its tarball into an empty project', () => {
  it('creates a sandbox under plain node, no tsx', async () => {
    await writeFile(
      join(app, 'create.mjs'),
      `import { DurableSandboxClient } from '@durable-sandbox/client';
const client = new DurableSandboxClient({ baseUrl: process.env.URL, token: process.env.TOKEN });
const op = await client.createSandboxAndWait({
  template: 'base',
  resources: { cpu: '500m', memory_mib: 1024, disk_mib: 2048 },
});
console.log(op.status, op.result?.sandbox.id, op.result?.sandbox.pod.ip);
`,
    );
    const { stdout } = await run(process.execPath, ['create.mjs'], {
      cwd: app,
      env: { PATH: process.env.PATH, URL: url, TOKEN: api.tenantA.token },
    });
    const [status, id, ip] = stdout.trim().split(' ');
    expect(status, stdout).toBe('succeeded');
    // The API holds what the installed client created.
    const sandbox = await api.stack.store.getSandbox(api.tenantA.id, id as string);
    expect(sandbox?.state).toBe('running');
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });

  it('carries its types: a TypeScript caller checks, and a wrong body is a compile error', async () => {
    await writeFile(
      join(app, 'typed.ts'),
      `import { DurableSandboxClient, type Operation } from '@durable-sandbox/client';
const client = new DurableSandboxClient({ baseUrl: 'http://127.0.0.1:1', token: 't' });
export async function create(): Promise<Operation> {
  return client.createSandbox({ template: 'base', resources: { cpu: 1, memory_mib: 1, disk_mib: 1 } });
}
export async function wrong(): Promise<unknown> {
  // @ts-expect-error disk_mib is a number: with no types this line would be unused and fail
  return client.createSandbox({ template: 'base', resources: { cpu: 1, memory_mib: 1, disk_mib: 'x' } });
}
`,
    );
    const check = await run(
      process.execPath,
      [
        TSC,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--skipLibCheck',
        'false',
        'typed.ts',
      ],
      { cwd: app },
    ).catch((error: { stdout?: string; stderr?: string }) => error);
    expect('stdout' in check ? check.stdout : '', JSON.stringify(check)).toBe('');
  });
});
