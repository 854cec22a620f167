/**
 * One client-node `ListWatch` kept running (docs/architecture.md, "The readiness watch"):
 * `ListWatch` stops for good on any error but a 410 or an idle cut, so this restarts it by
 * src/kubernetes/watch-policy.ts's table (jittered back-off, Retry-After, the 401 and 403 bounds,
 * other 4xx refused), adds full jitter to its own re-open delay (its `delayFn` option), and tells the
 * owner when the apiserver refuses it and when it is served again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ERROR, ListWatch, type KubernetesObject } from '@kubernetes/client-node';
import { InformerWatch } from './informer-watch.js';
import type { SandboxInformersOptions } from './sandbox-informers.js';
import {
  backoffDelayMs,
  classifyInformerError,
  WATCH_ERROR_POLICY,
  type InformerResource,
} from './watch-policy.js';

/**
 * A ListWatch kept running: restarted after every error by the policy table, with its state
 * for the waits (refused or not) and for the back-off.
 */
export class KeptInformer<T extends KubernetesObject> {
  readonly listWatch: ListWatch<T>;
  private stopped = false;
  private failures = 0;
  /** Since when the apiserver has answered 401 or 403 (the bounded refusals), epoch ms. */
  private refusedSinceMs: number | undefined;
  private streamUpSinceMs: number | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Set while the apiserver refuses this informer (other 4xx, 401 or 403 past its bound). */
  refusal: string | undefined;

  constructor(
    private readonly resource: InformerResource,
    private readonly options: SandboxInformersOptions,
    path: string,
    list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>,
    selectors: { labelSelector?: string; fieldSelector?: string },
    private readonly onRefusalChange: (refusal: string | undefined) => void,
    /** Called after each list has been applied to the cache (the first one, and every re-list). */
    private readonly onListed: () => void = () => undefined,
  ) {
    const random = options.random ?? Math.random;
    const watch = new InformerWatch(options.client.kubeConfig, {
      timeoutSeconds: options.watchTimeoutSeconds,
      observer: {
        onOpen: (cause) => options.observer?.onWatchOpen?.(resource, cause),
        onStream: (open) => this.streamChanged(open),
      },
    });
    this.listWatch = new ListWatch<T>(
      path,
      watch,
      async () => {
        options.observer?.onList?.(resource);
        const listed = await list();
        // ListWatch applies the items as soon as this resolves (same microtask run): report after.
        setImmediate(() => this.onListed());
        return listed as never;
      },
      false,
      selectors.labelSelector,
      selectors.fieldSelector,
      // ListWatch's own re-open delay (a stream that ended without any event) gets full jitter.
      { delayFn: (ms) => sleep(Math.floor(random() * ms)) },
    );
    this.listWatch.on(ERROR, (err: unknown) => this.failed(err));
  }

  start(): void {
    this.stopped = false;
    void this.listWatch.start().catch((err: unknown) => this.failed(err));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.listWatch.stop();
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private streamChanged(open: boolean): void {
    this.options.observer?.onWatchStream?.(this.resource, open);
    if (open) {
      this.streamUpSinceMs = this.now();
      this.refusedSinceMs = undefined;
      if (this.refusal !== undefined) {
        this.refusal = undefined;
        this.options.logger?.info?.(
          { resource: this.resource },
          `the ${this.resource} informer is served again`,
        );
        this.onRefusalChange(undefined);
      }
      return;
    }
    // A stream that stayed up long enough resets the back-off.
    if (
      this.streamUpSinceMs !== undefined &&
      this.now() - this.streamUpSinceMs >= WATCH_ERROR_POLICY.resetAfterMs
    ) {
      this.failures = 0;
    }
    this.streamUpSinceMs = undefined;
  }

  /** ListWatch stopped on an error: decide, then restart it (now or after a back-off). */
  private failed(err: unknown): void {
    if (this.stopped) return;
    const decision = classifyInformerError(err);
    const backoff = (retryAfterMs?: number) =>
      backoffDelayMs(
        this.failures++,
        { baseMs: this.options.retryDelayMs, capMs: this.options.backoffCapMs },
        this.options.random ?? Math.random,
        retryAfterMs,
      );
    let delayMs = 0;
    switch (decision.action) {
      case 'reopen':
        break;
      case 'backoff':
        delayMs = backoff(decision.retryAfterMs);
        break;
      case 'unauthorized': {
        const now = this.now();
        this.refusedSinceMs ??= now;
        const boundMs = this.options.unauthorizedBoundMs ?? WATCH_ERROR_POLICY.unauthorizedBoundMs;
        if (now - this.refusedSinceMs >= boundMs && this.refusal === undefined) {
          this.refuse(
            `the apiserver has refused the worker's credentials (HTTP 401) for ` +
              `${Math.round((now - this.refusedSinceMs) / 1000)} s on ${this.resource}`,
            decision.status,
          );
        }
        delayMs = backoff();
        break;
      }
      case 'forbidden': {
        // A restarted apiserver answers 403 until its RBAC caches have synced: retried first.
        const now = this.now();
        this.refusedSinceMs ??= now;
        const boundMs = this.options.forbiddenBoundMs ?? WATCH_ERROR_POLICY.forbiddenBoundMs;
        if (now - this.refusedSinceMs < boundMs) {
          delayMs = backoff();
          break;
        }
        this.refuseForGood(decision.status, decision.message);
        delayMs = backoff();
        break;
      }
      case 'refused':
        this.refuseForGood(decision.status, decision.message);
        delayMs = backoff();
        break;
    }
    this.options.logger?.info?.(
      { resource: this.resource, cause: decision.cause, delay_ms: delayMs },
      `the ${this.resource} informer is restarting`,
    );
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) this.start();
    }, delayMs);
    this.retryTimer.unref();
  }

  /** Refused past any bound: the owner is told once, and the retries go to the back-off cap. */
  private refuseForGood(status: number, apiserverMessage: string): void {
    if (this.refusal === undefined) {
      this.refuse(
        `the worker may not list and watch ${this.resource} in namespace ` +
          `${this.options.client.namespace} (HTTP ${status}: ${apiserverMessage}); ` +
          `grant list and watch on ${this.resource} (deploy/rbac.yaml)`,
        status,
      );
    }
    // Keep trying at the cap: a later grant heals the worker without a restart.
    this.failures = Math.max(this.failures, 30);
  }

  private refuse(message: string, status: number): void {
    this.refusal = message;
    const log = this.options.logger;
    if (this.resource === 'pods') {
      (log?.error ?? log?.warn)?.call(log, { resource: 'pods', status }, message);
    }
    this.onRefusalChange(message);
  }
}
