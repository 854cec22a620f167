/**
 * `CLUSTER=real npm start`: the embedded stack on the real apiserver tier (etcd, kube-apiserver,
 * node agent) as a child process, on the run's Temporal dev server. The banner names the apiserver and an admin kubeconfig that
 * works; a refused create fails as on the simulated cluster; SIGINT stops etcd and
 * kube-apiserver too.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startStackProcess, type StackProcess } from './support/stack-process.js';
import { uniqueTaskQueue } from './support/temporal.js';
import { waitUntil } from '../tools/wait-until.js';

let stack: StackProcess;
const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-real-start-'));

// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  // The run's shared dev server and a task queue of its own: a second embedded dev server would
  // race the other npm start suites for the default Temporal ports.
  stack = await startStackProcess({
    DATA_DIR: dataDir,
    CLUSTER: 'real',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue('real-start'),
  });
}, 20 * 60_000);

afterAll(() => {
  if (stack?.child.exitCode === null) stack.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** Pids of running processes whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmdline.some((arg) => arg.includes(needle))) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

describe('CLUSTER=real npm start', () => {
  it('runs a refused create to invalid_request on a real kube-apiserver, seen with the admin kubeconfig', async () => {
    const output = stack.output();
    expect(output).toMatch(/Kubernetes:\s+real kube-apiserver https:\/\/127\.0\.0\.1:\d+/);
    expect(output).toContain(
      `export KUBECONFIG=${join(dataDir, 'kubeconfig-admin')}; kubectl get pods,events`,
    );

    const response = await fetch(`${stack.apiUrl}/v1/sandboxes`, {
      method: 'POST',
      headers: { authorization: 'Bearer dev-token', 'content-type': 'application/json' },
      body: JSON.stringify({
        template: 'base',
        resources: { cpu: 1, memory_mib: 256, disk_mib: 300 },
      }),
    });
    expect(response.status).toBe(202);
    const { id } = (await response.json()) as { id: string };
    const done = await waitUntil(async () => {
      const op = (await (
        await fetch(`${stack.apiUrl}/v1/operations/${id}`, {
          headers: { authorization: 'Bearer dev-token' },
        })
      ).json()) as { done: boolean; error: { code: string; message: string } | null };
      return op.done ? op : undefined;
    });
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toContain('451 MiB');

    const admin = new KubeConfig();
    admin.loadFromFile(join(dataDir, 'kubeconfig-admin'));
    const events = await admin.makeApiClient(CoreV1Api).listNamespacedEvent({
      namespace: 'sandboxes',
      fieldSelector: 'reason=FailedCreatePodSandBox',
    });
    expect(events.items.map((event) => event.source?.component)).toContain('kubelet');
  });

  it('stops etcd and kube-apiserver on SIGINT', async () => {
    const port = /real kube-apiserver https:\/\/127\.0\.0\.1:(\d+)/.exec(stack.output())?.[1];
    const apiservers = processesWith(`--secure-port=${port}`);
    expect(apiservers.length).toBeGreaterThan(0);
    const etcdUrl = readFileSync(`/proc/${apiservers[0]}/cmdline`, 'utf8')
      .split('\0')
      .find((arg) => arg.startsWith('--etcd-servers='))
      ?.slice('--etcd-servers='.length);
    const tier = [...apiservers, ...processesWith(`--listen-client-urls=${etcdUrl}`)];
    expect(tier.length).toBeGreaterThan(apiservers.length);

    expect(await stack.interrupt()).toBe(0);
    const alive = tier.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    expect(alive).toEqual([]);
  });
});
