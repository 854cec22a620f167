/**
 * The command-line client against the real API (listening on a free port) over a real dev
 * server, a worker, the simulated cluster and a SQLite store.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../clients/cli/program.js';
import {
  formatSandboxList,
  formatTemplateList,
  humanDuration,
  progressText,
} from '../clients/cli/format.js';
import { DurableSandboxClient, pollDelayMs } from '../clients/typescript/src/index.js';
import { startApiStack, type ApiStack } from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

let api: ApiStack;
let url: string;
beforeAll(async () => {
  api = await startApiStack({
    // This suite watches the node refuse disk 300 again and again.
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
  });
  ({ url } = await api.listen());
});
afterAll(async () => {
  await api?.stop();
});

/** The package's `bin`. */
const BIN = fileURLToPath(new URL('../clients/cli/bin/durable-sandbox.js', import.meta.url));

/**
 * Runs the CLI in a pseudo-terminal (util-linux `script`, part of every Debian/Ubuntu base
 * system), so stdin and stderr are a terminal as for a person: the spinner runs, and Ctrl-C is
 * a keypress the terminal turns into SIGINT.
 */
function startInTerminal(args: string[], size = { columns: 120, rows: 40 }) {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color' };
  delete env.CI; // ora shows no spinner (and never touches stdin) when CI is set
  const stty = `stty cols ${size.columns} rows ${size.rows}`;
  const child = spawn('script', ['-qfec', `${stty}; exec ${command}`, '/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env,
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  const cliPid = (): number | undefined => {
    try {
      const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8');
      return Number(children.trim().split(/\s+/)[0]) || undefined;
    } catch {
      return undefined; // script has exited
    }
  };
  return {
    output: () => text,
    press: (keys: string) => child.stdin.write(keys),
    /** Sends `signal` to the CLI's process (the shell under `script` execs it). */
    kill(signal: NodeJS.Signals) {
      const pid = cliPid();
      expect(pid, 'the CLI process under script').toBeDefined();
      process.kill(pid!, signal);
    },
    /** Kills the CLI and `script` if they still run (a failed test leaves nothing behind). */
    stop() {
      const pid = cliPid();
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
      if (child.exitCode === null) child.kill('SIGKILL');
    },
    /** Resolves once `pattern` is in the output; the error names the output at the timeout. */
    waitFor: (pattern: RegExp) =>
      waitUntil(async () => pattern.test(text), {
        timeoutMs: 30_000,
        what: `${pattern} in the terminal`,
      }).catch((err: Error) => {
        throw new Error(`${err.message}; the terminal showed ${JSON.stringify(text.slice(-600))}`);
      }),
    async exited(timeoutMs: number): Promise<number | null> {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await closed;
      clearTimeout(timer);
      return code;
    },
  };
}

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/** Runs the CLI in process as tenant A against the test API. */
async function cli(...args: string[]) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(args, {
    stdout,
    stderr,
    env: { DURABLE_SANDBOX_URL: url, DURABLE_SANDBOX_TOKEN: api.tenantA.token },
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('cli', () => {
  it('create --label sets labels; list -l finds the sandbox by them; --show-labels shows them', async () => {
    const created = await cli(
      'create',
      '--disk-mib',
      '2048',
      '-l',
      'team=cli',
      '--label',
      'env=dev',
      '-o',
      'json',
    );
    expect(created.code, created.stderr).toBe(0);
    const sandboxId = (JSON.parse(created.stdout) as { sandbox_id: string }).sandbox_id;
    const found = await cli('list', '-l', 'team=cli,env in (dev,prod)', '--show-labels');
    expect(found.code, found.stderr).toBe(0);
    expect(found.stdout).toMatch(/LABELS/);
    expect(found.stdout).toContain(sandboxId);
    expect(found.stdout).toContain('env=dev,team=cli');
    const none = await cli('list', '-l', 'team=cli,env notin (dev)');
    expect(none.stdout).not.toContain(sandboxId);
  });

  it('label sets and removes as kubectl label: --overwrite to change a value, --list to print', async () => {
    const created = await cli(
      'create',
      '--disk-mib',
      '2048',
      '-l',
      'team=a',
      '-l',
      'env=dev',
      '-o',
      'json',
    );
    const sandboxId = (JSON.parse(created.stdout) as { sandbox_id: string }).sandbox_id;

    const refused = await cli('label', sandboxId, 'team=b');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("'team' already has a value (a), and --overwrite is false");

    const changed = await cli(
      'label',
      sandboxId,
      'team=b',
      'env-',
      'owner=bob',
      'gone-',
      '--overwrite',
    );
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout).toBe(`${sandboxId} labeled: owner=bob,team=b\n`);
    expect(changed.stderr).toContain('label "gone" not found.');
    expect((await cli('label', sandboxId, '--list')).stdout).toBe('owner=bob\nteam=b\n');
  });

  it('a bad label is a usage error naming the label and the rule; nothing is sent', async () => {
    const create = await cli('create', '--disk-mib', '2048', '-l', 'Bad Key=x');
    expect(create.code).toBe(2);
    expect(create.stderr).toContain('labels["Bad Key"] key is not a valid label key');
    const label = await cli('label', 'sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'team=a b');
    expect(label.code).toBe(2);
    expect(label.stderr).toContain('labels["team"] value "a b" is invalid');
    const pair = await cli('create', '--disk-mib', '2048', '-l', 'team');
    expect(pair.code).toBe(2);
    expect(pair.stderr).toContain('expects key=value');
  });

  it('list -l with a malformed selector exits 1 naming where', async () => {
    const result = await cli('list', '-l', 'team in (a');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'error: invalid_request: label_selector is not a valid label selector',
    );
    expect(result.stderr).toContain('at character 11');
  });

  it('list --state with an unknown state is a usage error (exit 2) naming the states', async () => {
    const result = await cli('list', '--state', 'bogus');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "error: option '--state <state>' argument 'bogus' is invalid. Allowed choices are creating, running, failed, deleted, lost.",
    );
    expect(result.stderr).toContain("See 'npx durable-sandbox list --help' for usage.");
  });

  it('exits quietly when the reader of its output goes away (| head), without an EPIPE stack', async () => {
    const child = spawn(
      process.execPath,
      [BIN, '--api-url', url, '--token', api.tenantA.token, 'templates'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout.destroy(); // the reader is gone before the CLI writes its table
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('wait counts the time from when the phase began, not from when the CLI started', async () => {
    api.stack.cluster.faults.neverReady(true);
    const interrupt = new AbortController();
    try {
      const created = await cli('--json', 'create', '--disk-mib', '2048');
      const operationId = (JSON.parse(created.stdout) as { id: string }).id;
      await waitUntil(
        async () => {
          const got = JSON.parse((await cli('--json', 'get', operationId)).stdout) as {
            phase: string;
            updated_at: string;
          };
          return got.phase === 'waiting_for_ip' && Date.now() - Date.parse(got.updated_at) > 3_000;
        },
        { timeoutMs: 30_000 },
      );
      const stderr = new Capture();
      const waiting = run(['wait', operationId], {
        stdout: new Capture(),
        stderr,
        env: { DURABLE_SANDBOX_URL: url, DURABLE_SANDBOX_TOKEN: api.tenantA.token },
        signal: interrupt.signal,
      });
      await waitUntil(() => /waiting for the pod's IP/.test(stderr.text), { timeoutMs: 15_000 });
      interrupt.abort('SIGINT');
      expect(await waiting).toBe(130);
      expect(stderr.text).toMatch(
        new RegExp(`^- ${operationId}: waiting for the pod's IP, ([3-9]|\\d\\d) s`, 'm'),
      );
      expect((await cli('cancel', operationId, '--wait')).code).toBe(0);
    } finally {
      interrupt.abort();
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('create --wait exits 0 and prints the running sandbox', async () => {
    const result = await cli('create', '--template', 'base', '--disk-mib', '2048', '--wait');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/status\s+succeeded/);
    expect(result.stdout).toMatch(/state\s+running/);
    expect(result.stdout).toMatch(/ip=\d+\.\d+\.\d+\.\d+/);
  });

  it('create --wait exits 1 with invalid_request naming 451 MiB when the node refuses the disk', async () => {
    const result = await cli('create', '--disk-mib', '300', '--wait');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: invalid_request: .*451 MiB$/m);
    expect(result.stdout).toMatch(/status\s+failed/);
    // The error is printed once (stderr), not again in the operation on stdout.
    const output = result.stdout + result.stderr;
    expect(output.match(/451 MiB/g), output).toHaveLength(1);
    // Progress lines (not a terminal) name the phase in words.
    expect(result.stderr).toMatch(
      /^- op_\w+: (creating the pod|waiting for the pod's IP), \d+ s, deadline \d\d:\d\d$/m,
    );
  });

  it('create --idempotency-key run twice is one create: the same operation, one sandbox', async () => {
    const key = `cli-key-${Date.now()}`;
    const args = ['--json', 'create', '--disk-mib', '2048', '--idempotency-key', key];
    const first = await cli(...args);
    const second = await cli(...args);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const [a, b] = [JSON.parse(first.stdout), JSON.parse(second.stdout)];
    expect(b.id).toBe(a.id);
    expect(b.sandbox_id).toBe(a.sandbox_id);
    // The same key with another body is the API's conflict, shown as such.
    const other = await cli('create', '--disk-mib', '4096', '--idempotency-key', key);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^error: idempotency_conflict: /m);
  });

  it('--json prints only the operation as JSON', async () => {
    const result = await cli('--json', 'create', '--disk-mib', '2048', '--wait');
    expect(result.code, result.stderr).toBe(0);
    const operation = JSON.parse(result.stdout);
    expect(operation).toMatchObject({
      status: 'succeeded',
      result: { sandbox: { state: 'running' } },
    });
    expect(result.stderr).toBe('');
  });

  it('create --sync prints the sandbox, or the node refusal', async () => {
    const ok = await cli('--json', 'create', '--disk-mib', '2048', '--sync');
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ state: 'running' });
    // Off a terminal: plain lines, no symbols or colour codes.
    const plain = await cli('create', '--disk-mib', '2048', '--sync');
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stderr).toMatch(
      /^- creating sandbox \(synchronous\)\n- sandbox sbx_[a-z0-9]+ running\n$/,
    );
    expect(plain.stdout).toMatch(/state\s+running/);
    const refused = await cli('create', '--disk-mib', '300', '--sync');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error: invalid_request: .*451 MiB/);
  });

  it('a create a resource quota refuses exits 1 with quota_exceeded and a hint (--wait and --sync)', async () => {
    api.stack.cluster.faults.quotaPods({ name: 'sandbox-quota', pods: 0 });
    try {
      for (const mode of ['--wait', '--sync']) {
        const result = await cli('create', '--disk-mib', '2048', mode);
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toMatch(/^error: quota_exceeded: .*exceeded quota: sandbox-quota/m);
        expect(result.stderr).toMatch(
          /^hint: a resource quota of the sandbox namespace, or one of your tenant limits/m,
        );
      }
    } finally {
      api.stack.cluster.faults.quotaPods(null);
    }
  });

  it('create, get, wait, cancel and list work on ids of the API', async () => {
    const created = await cli('--json', 'create', '--disk-mib', '300');
    expect(created.code, created.stderr).toBe(0);
    const operation = JSON.parse(created.stdout) as { id: string; sandbox_id: string };

    const waited = await cli('--json', 'wait', operation.id);
    expect(waited.code).toBe(1);
    expect(JSON.parse(waited.stdout)).toMatchObject({ id: operation.id, status: 'failed' });

    const op = await cli('get', operation.id);
    expect(op.code).toBe(0);
    expect(op.stdout).toContain(operation.id);
    const sandbox = await cli('--json', 'get', operation.sandbox_id);
    expect(JSON.parse(sandbox.stdout)).toMatchObject({ id: operation.sandbox_id, state: 'failed' });

    const cancel = await cli('cancel', operation.id);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(/^error: already_done: /);

    const sandboxes = await cli('list', '--state', 'failed');
    expect(sandboxes.code).toBe(0);
    expect(sandboxes.stdout).toMatch(/^ID\s+STATE\s+TEMPLATE\s+AGE\s+REASON$/m);
    expect(sandboxes.stdout).toMatch(
      new RegExp(`^${operation.sandbox_id}\\s+failed\\s+base\\s+\\d+s\\s+invalid_request: `, 'm'),
    );
    const failed = await waitUntil(
      async () => {
        const listed = await cli('--json', 'list', '--failed');
        const ids = (JSON.parse(listed.stdout).operations as Array<{ id: string }>).map(
          (o) => o.id,
        );
        return ids.includes(operation.id) ? ids : undefined;
      },
      { what: 'the failed operation listed' },
    );
    expect(failed).toContain(operation.id);
  });

  it('deletes a running sandbox with delete --wait', async () => {
    const created = await cli('--json', 'create', '--disk-mib', '2048', '--wait');
    expect(created.code, created.stderr).toBe(0);
    const sandboxId = (JSON.parse(created.stdout) as { sandbox_id: string }).sandbox_id;
    const deleted = await cli('delete', sandboxId, '--wait');
    expect(deleted.code, deleted.stderr).toBe(0);
    // Not a terminal here: plain progress lines, no colour codes.
    expect(deleted.stderr).not.toContain('\u001b[');
    const sandbox = await cli('--json', 'get', sandboxId);
    expect(JSON.parse(sandbox.stdout)).toMatchObject({ id: sandboxId, state: 'deleted' });
    // A cleanup script deletes again: it succeeds, with a note instead of already_done.
    const again = await cli('delete', sandboxId, '--wait');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe(`${sandboxId} is already deleted: nothing to do\n`);
  });

  it('create --wait --sync is a usage error (exit 2): --sync already waits', async () => {
    const both = await cli('create', '--disk-mib', '2048', '--wait', '--sync');
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^error: option '--sync' cannot be used with option '--wait'/);
  });

  it('create --sync that runs out of its budget says pod_never_ready with a hint', async () => {
    const short = await api.listen(api.appWith({ SYNC_READINESS_BUDGET_MS: '2000' }));
    api.stack.cluster.faults.refuseWith('Unavailable', 'runtime is not ready');
    try {
      const stderr = new Capture();
      const code = await run(['create', '--disk-mib', '2048', '--sync'], {
        stdout: new Capture(),
        stderr,
        env: { DURABLE_SANDBOX_URL: short.url, DURABLE_SANDBOX_TOKEN: api.tenantA.token },
      });
      expect(code).toBe(1);
      expect(stderr.text).toMatch(/^error: pod_never_ready: .*SYNC_READINESS_BUDGET_MS/m);
      expect(stderr.text).toMatch(/^hint: .*create without --sync .*SYNC_READINESS_BUDGET_MS$/m);
    } finally {
      api.stack.cluster.faults.refuseWith(null);
      await short.close();
    }
  });

  it('prints the API error for a bad token, an unknown id, an unreachable API and bad usage', async () => {
    const badToken = await cli('--token', 'nope', 'list');
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/^error: unauthenticated: /);
    const unknown = await cli('get', 'sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    expect(unknown.stderr).toMatch(/^error: not_found: /);
    const unreachable = await cli('--api-url', 'http://127.0.0.1:1', 'list');
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: unavailable: cannot reach/);
    // docs/cli.md: an unavailable error adds a hint; for no answer at all, where the CLI looked.
    expect(unreachable.stderr).toMatch(
      /^hint: is the API running at http:\/\/127\.0\.0\.1:1\? .*DURABLE_SANDBOX_URL/m,
    );
    const usage = await cli('create');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--disk-mib');
    const notAnId = await cli('get', 'banana');
    expect(notAnId.code).toBe(2);
  });

  it('a usage error names the problem and the help command, without printing the help', async () => {
    const usage = await cli('create');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe(
      "error: required option '--disk-mib <n>' not specified\nSee 'npx durable-sandbox create --help' for usage.\n",
    );
    const badOutput = await cli('-o', 'yaml', 'list');
    expect(badOutput.code).toBe(2);
    expect(badOutput.stderr).not.toContain('Options:');
  });

  it('delete of an operation id says it expects sbx_…, and wait of a sandbox id op_…', async () => {
    const deleted = await cli('delete', 'op_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    expect(deleted.code).toBe(2);
    expect(deleted.stderr).toMatch(/^error: delete expects a sandbox id \(sbx_…\)/);
    expect(deleted.stderr).toContain('durable-sandbox cancel op_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    const waited = await cli('wait', 'sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    expect(waited.code).toBe(2);
    expect(waited.stderr).toMatch(/^error: wait expects an operation id \(op_…\)/);
  });

  it('--version prints the package version', async () => {
    const result = await cli('--version');
    expect(result.code).toBe(0);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(result.stdout).toBe(`${pkg.version}\n`);
  });

  it('list prints a table with AGE, -o wide adds columns, and a cut list names the next page', async () => {
    for (let i = 0; i < 2; i++) {
      expect((await cli('create', '--disk-mib', '300', '--wait')).code).toBe(1);
    }
    const table = await cli('list', '--state', 'failed', '--limit', '1');
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+TEMPLATE\s+AGE\s+REASON$/);
    expect(lines).toHaveLength(2);
    const hint = table.stderr.match(
      /^More results: npx durable-sandbox list --state failed --limit 1 --page-token (\S+)$/m,
    );
    expect(hint, table.stderr).not.toBeNull();
    const next = await cli('list', '--state', 'failed', '--limit', '1', '--page-token', hint![1]!);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.split('\n')[1]?.split(/\s+/)[0]).not.toBe(lines[1]?.split(/\s+/)[0]);

    const wide = await cli('list', '--state', 'failed', '-o', 'wide', '--limit', '1');
    expect(wide.stdout).toMatch(
      /^ID\s+STATE\s+TEMPLATE\s+CPU\s+MEMORY\s+DISK\s+POD\s+IP\s+AGE\s+REASON$/m,
    );
    const json = await cli('list', '--state', 'failed', '-o', 'json', '--limit', '1');
    expect(JSON.parse(json.stdout)).toMatchObject({ sandboxes: [{ state: 'failed' }] });
    expect(json.stderr).toBe('');

    const operations = await cli('list', '--failed', '--limit', '1');
    expect(operations.stdout).toMatch(/^ID\s+TYPE\s+STATUS\s+SANDBOX\s+AGE\s+ERROR$/m);
  });

  it('cancel says "cancel requested"; cancel --wait waits until the create ended cancelled', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const created = await cli('--json', 'create', '--disk-mib', '2048');
      expect(created.code, created.stderr).toBe(0);
      const operation = JSON.parse(created.stdout) as { id: string };
      const cancel = await cli('cancel', operation.id);
      expect(cancel.code, cancel.stderr).toBe(0);
      expect(cancel.stdout).toBe(
        `${operation.id}: cancel requested (the create deletes its pod, then ends cancelled)\n`,
      );
      const waited = await cli('cancel', operation.id, '--wait');
      // A second cancel of a create still compensating is accepted, or answered already_done.
      if (waited.code !== 0) expect(waited.stderr).toMatch(/already_done/);
      const after = await cli('--json', 'wait', operation.id);
      expect(JSON.parse(after.stdout)).toMatchObject({ status: 'cancelled' });

      const second = JSON.parse((await cli('--json', 'create', '--disk-mib', '2048')).stdout) as {
        id: string;
      };
      const cancelWait = await cli('cancel', second.id, '--wait');
      expect(cancelWait.code, cancelWait.stderr).toBe(0);
      expect(cancelWait.stdout).toMatch(
        new RegExp(`^${second.id}: cancel requested \\(the create deletes its pod`),
      );
      expect(cancelWait.stdout).toMatch(/status\s+cancelled/);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('Ctrl-C in a terminal stops create --wait at once; the create goes on', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const terminal = startInTerminal([
        '--api-url',
        url,
        '--token',
        api.tenantA.token,
        'create',
        '--disk-mib',
        '2048',
        '--wait',
      ]);
      await terminal.waitFor(/waiting for the pod's IP/);
      // No change comes while the pod has no IP: the elapsed time still counts, from a timer.
      await terminal.waitFor(/waiting for the pod's IP, [2-9] s/);
      const operationId = terminal.output().match(/op_[a-z0-9]+/)?.[0];
      expect(operationId, terminal.output()).toBeDefined();
      terminal.press('\u0003');
      const code = await terminal.exited(15_000);
      const output = terminal.output();
      expect(code, `terminal output ends: ${JSON.stringify(output.slice(-400))}`).toBe(130);
      expect(output).toContain(`${operationId} goes on`);
      expect(output).toContain(`npx durable-sandbox wait ${operationId}`);
      expect(output).toContain(`npx durable-sandbox cancel ${operationId}`);
      const still = await cli('--json', 'get', operationId!);
      expect(JSON.parse(still.stdout)).toMatchObject({ status: 'running' });
      expect((await cli('cancel', operationId!, '--wait')).code).toBe(0);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('SIGTERM on a terminal of 0×0 ends create --wait like Ctrl-C (exit 143), with plain lines', async () => {
    api.stack.cluster.faults.neverReady(true);
    const terminal = startInTerminal(
      ['--api-url', url, '--token', api.tenantA.token, 'create', '--disk-mib', '2048', '--wait'],
      { columns: 0, rows: 0 },
    );
    try {
      // A terminal without a width gets the plain lines of a pipe, not a spinner.
      await terminal.waitFor(/^- op_[a-z0-9]+: waiting for the pod's IP, \d+ s, deadline /m);
      const operationId = terminal.output().match(/op_[a-z0-9]+/)?.[0];
      terminal.kill('SIGTERM');
      const code = await terminal.exited(15_000);
      const output = terminal.output();
      expect(code, `terminal output ends: ${JSON.stringify(output.slice(-400))}`).toBe(143);
      expect(output).toContain(`${operationId} goes on`);
      expect(output).toContain(`durable-sandbox cancel ${operationId}`);
      expect(output).not.toContain('\u001b[1A');
      expect((await cli('cancel', operationId!, '--wait')).code).toBe(0);
    } finally {
      terminal.stop();
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('in a terminal, an error is the last line: no spinner frame after it', async () => {
    const terminal = startInTerminal([
      '--api-url',
      url,
      '--token',
      api.tenantA.token,
      'create',
      '--disk-mib',
      '2048',
      '--template',
      'nope',
      '--sync',
    ]);
    expect(await terminal.exited(15_000)).toBe(1);
    const output = terminal.output();
    const after = output.slice(output.indexOf('error: invalid_request'));
    expect(after, JSON.stringify(output)).toMatch(/^error: invalid_request: [^\n]*\n/);
    expect(after).not.toMatch(/creating sandbox|[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
  });

  it('shows the deadline only while the create can still wait for its IP', () => {
    const operation = {
      id: 'op_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      phase: 'waiting_for_ip',
      status: 'running',
      done: false,
      deadline_at: '2026-01-01T10:12:00.000Z',
    } as Parameters<typeof progressText>[0];
    expect(progressText(operation, 3_000)).toMatch(
      /^op_a+: waiting for the pod's IP, 3 s, deadline \d\d:\d\d$/,
    );
    expect(progressText({ ...operation, phase: 'creating_pod' }, 0)).toContain('deadline');
    expect(progressText({ ...operation, phase: 'compensating', status: 'failed' }, 4_000)).toBe(
      'op_aaaaaaaaaaaaaaaaaaaaaaaaaa: compensating: deleting the pod, 4 s',
    );
    expect(progressText({ ...operation, phase: 'finished', done: true }, 0)).not.toContain(
      'deadline',
    );
  });

  it('cuts table rows to the terminal width and prints AGE as kubectl does', () => {
    const sandbox = {
      id: 'sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      template: 'base',
      resources: { cpu: 1, memory_mib: 1024, disk_mib: 300 },
      state: 'failed' as const,
      pod: { name: null, uid: null, ip: null },
      failure: {
        code: 'invalid_request' as const,
        message: 'the node refused the sandbox: '.repeat(5),
      },
      operation_id: 'op_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:01.000Z',
      expire_time: null,
      labels: {},
    };
    const nowMs = Date.parse(sandbox.created_at) + 330_000;
    const table = formatSandboxList([sandbox], { columns: 80, nowMs });
    for (const line of table.trimEnd().split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    expect(table.trimEnd().split('\n')[1]).toMatch(
      /^sbx_a+\s+failed\s+base\s+5m30s\s+invalid_req.*…$/,
    );
    expect(formatSandboxList([sandbox], { nowMs })).toContain(
      'the node refused the sandbox: '.repeat(5).trim(),
    );
    expect(
      [90, 600, 7_200, 30_000, 200_000, 1_000_000].map((s) => humanDuration(s * 1000)),
    ).toEqual(['90s', '10m', '120m', '8h', '2d7h', '11d']);
  });

  it('pauses after an immediate unchanged answer at the pace of Retry-After, at least 500 ms', () => {
    expect(pollDelayMs('1')).toBe(1000);
    expect(pollDelayMs('0')).toBe(500);
    expect(pollDelayMs(null)).toBe(500);
    expect(pollDelayMs('soon')).toBe(500);
  });

  it('waits with long-polls: one request per change, not one a second', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const created = await cli('--json', 'create', '--disk-mib', '2048');
      const operation = JSON.parse(created.stdout) as { id: string };
      const asked: string[] = [];
      const client = new DurableSandboxClient({
        baseUrl: url,
        token: api.tenantA.token,
        fetch: (request) => {
          asked.push(request.url);
          return fetch(request);
        },
      });
      const waited = client.waitForOperation(operation.id);
      // A sleep: four quiet seconds (a 1 s poll would ask four times), then a change: the cancel.
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect(await cli('cancel', operation.id)).toMatchObject({ code: 0 });
      const done = await waited;
      expect(done).toMatchObject({ status: 'cancelled', done: true });
      expect(asked.slice(1).every((u) => u.endsWith('?wait=30s'))).toBe(true);
      // The first read, the phase change to waiting_for_ip (when the wait began before it), the
      // cancel asked (requested_cancellation: the wait names its last ETag, so any field the
      // caller sees change answers it), compensating, finished.
      expect(asked.length).toBeLessThanOrEqual(5);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('runs as a process (package bin): exits 1 with invalid_request on stderr', async () => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        '--api-url',
        url,
        '--token',
        api.tenantA.token,
        'create',
        '--disk-mib',
        '300',
        '--wait',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/error: invalid_request: .*451 MiB/);
    expect(stdout).toMatch(/status\s+failed/);
  });

  it("quota prints the tenant's limits and usage; a create past a limit exits 1 with quota_exceeded and a hint", async () => {
    const tenant = { id: `cli-quota-${process.pid}`, token: `token-cli-quota-${process.pid}` };
    const limited = await api.listen(
      api.appWith({
        API_TOKENS: `${tenant.id}:${tenant.token}`,
        TENANT_LIMITS: JSON.stringify({ tenants: { [tenant.id]: { sandboxes: 1, cpu: 4 } } }),
      }),
    );
    const as = async (...args: string[]) => {
      const stdout = new Capture();
      const stderr = new Capture();
      const env = { DURABLE_SANDBOX_URL: limited.url, DURABLE_SANDBOX_TOKEN: tenant.token };
      const code = await run(args, { stdout, stderr, env });
      return { code, stdout: stdout.text, stderr: stderr.text };
    };
    try {
      const created = await as('create', '--disk-mib', '2048', '--sync', '-o', 'json');
      expect(created.code, created.stderr).toBe(0);
      const table = await as('quota');
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout.trimEnd().split('\n')).toEqual([
        `tenant  ${tenant.id}`,
        expect.stringMatching(/^LIMIT\s+USED\s+OF\s+SCOPE$/),
        expect.stringMatching(/^sandboxes\s+1\s+1\s+all replicas$/),
        expect.stringMatching(/^cpu\s+1\s+4\s+all replicas$/),
        expect.stringMatching(/^memory_mib\s+1024\s+81920\s+all replicas$/),
        expect.stringMatching(/^disk_mib\s+2048\s+409600\s+all replicas$/),
        expect.stringMatching(/^creates_per_second\s+-\s+5 \(burst 10\)\s+all replicas$/),
        expect.stringMatching(/^waits\s+0\s+100\s+this replica$/),
      ]);
      const json = await as('quota', '-o', 'json');
      expect(JSON.parse(json.stdout)).toMatchObject({
        tenant: tenant.id,
        limits: { sandboxes: 1 },
        usage: { sandboxes: 1 },
      });
      const refused = await as('create', '--disk-mib', '2048');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^error: quota_exceeded: this tenant's limit of 1 sandboxes/m);
      expect(refused.stderr).toMatch(/^hint: .*npx durable-sandbox quota/m);
    } finally {
      await limited.close();
    }
  });

  it('templates prints the catalog as a table; an unknown name exits 1 with not_found', async () => {
    const table = await cli('templates');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^NAME\s+IMAGE\s+FLOOR\s+SOURCE\s+AGE$/),
      expect.stringMatching(/^base\s+ghcr\.io\/durable-sandbox\/base:1\s+<unknown>\s+-\s+-$/),
    ]);
    const json = await cli('templates', 'base', '-o', 'json');
    expect(JSON.parse(json.stdout)).toMatchObject({
      name: 'base',
      rootfs_floor: { source: 'unknown', rootfs_mib: null },
    });
    const missing = await cli('templates', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: not_found: template nope does not exist\n');
  });

  it('templates shows a learned floor with its age and node, a declared one without', () => {
    const learnedAt = '2026-01-01T00:00:00.000Z';
    const templates = [
      {
        name: 'base',
        image: 'example.test/base:1',
        rootfs_floor: {
          source: 'learned' as const,
          rootfs_mib: 451,
          learned_at: learnedAt,
          node_name: 'node-1',
          reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
          operation_id: null,
        },
      },
      {
        name: 'big',
        image: 'example.test/big:1',
        rootfs_floor: { source: 'declared' as const, rootfs_mib: 2048 },
      },
    ];
    const nowMs = Date.parse(learnedAt) + 330_000;
    expect(formatTemplateList(templates, { nowMs }).trimEnd().split('\n')).toEqual([
      'NAME   IMAGE                 FLOOR    SOURCE     AGE',
      'base   example.test/base:1   451Mi    learned    5m30s',
      'big    example.test/big:1    2048Mi   declared   -',
    ]);
    const wide = formatTemplateList(templates, { nowMs, wide: true }).split('\n');
    expect(wide[0]).toMatch(/\bNODE\s+REASON$/);
    expect(wide[1]).toMatch(
      /node-1\s+rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB$/,
    );
  });
});
