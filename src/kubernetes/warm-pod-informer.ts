/**
 * One informer of the warm pools' unclaimed pods per worker process (docs/architecture.md,
 * "Warm pools"): a claim picks its candidates from this cache instead of listing the pool, so a
 * claim costs one update whatever the pool's size, and a reconcile reads it instead of listing
 * (it waits until the pods it made are in it, so the next reconcile counts them). A stale entry costs nothing but a 409 (the
 * claim's update names the resourceVersion it read), after which the claim tries another pod.
 * Started only by a worker whose catalog has a pool. Kept running as the readiness informers are
 * (src/kubernetes/kept-informer.ts); its watch counts as a `pods` watch in the watch metrics.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { KeptInformer } from './kept-informer.js';
import type { SandboxInformersOptions } from './sandbox-informers.js';
import { WARM_POOL_SELECTOR } from './warm-pods.js';

/** The unclaimed pool pods of the worker's namespace, listed and watched. */
export class WarmPodInformer {
  private readonly informer: KeptInformer<V1Pod>;
  private listed = false;
  private readonly namespace: string;

  constructor(options: SandboxInformersOptions) {
    const { client } = options;
    const namespace = client.namespace;
    this.namespace = namespace;
    const labelSelector = WARM_POOL_SELECTOR;
    this.informer = new KeptInformer<V1Pod>(
      'pods',
      options,
      `/api/v1/namespaces/${namespace}/pods`,
      () => client.core.listNamespacedPod({ namespace, labelSelector }),
      { labelSelector },
      (refusal) => {
        if (refusal) options.logger?.warn({ refusal }, 'warm pod informer refused; claims list');
      },
      () => (this.listed = true),
    );
  }

  /** Lists and watches (in the background); restarts on errors. */
  start(): void {
    this.informer.start();
  }

  /** Stops the informer. Idempotent. */
  async stop(): Promise<void> {
    await this.informer.stop();
  }

  /**
   * The cached pool pods, or undefined while the cache cannot be trusted (not listed yet, or
   * refused by the apiserver): the caller lists instead.
   */
  cached(): readonly V1Pod[] | undefined {
    if (!this.listed || this.informer.refusal !== undefined) return undefined;
    return this.informer.listWatch.list();
  }

  /**
   * Resolves once the cache holds every pod of `names` (pods this process just made), so the
   * next read counts them; or after `timeoutMs`, whichever is first. Reads memory only.
   * @returns whether all of them arrived
   */
  async sawCreated(names: readonly string[], timeoutMs = 5_000): Promise<boolean> {
    const deadlineAtMs = Date.now() + timeoutMs;
    const namespace = this.namespace;
    for (;;) {
      if (names.every((name) => this.informer.listWatch.get(name, namespace))) return true;
      if (Date.now() > deadlineAtMs) return false;
      await sleep(10);
    }
  }
}
