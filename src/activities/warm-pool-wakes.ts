/**
 * A claim's wake-up of its pool (docs/architecture.md, "Warm pools"), sent at most once per
 * {@link WARM_POOL_COALESCE_MS} per pool by one worker. Each signal costs the Temporal server a
 * history write and the pool's workflow a workflow task, while the pool, once woken, waits
 * {@link WARM_POOL_COALESCE_MS} for more claims before it reconciles: a burst of claims needs
 * one signal per window, not one per claim (bench: `npm run bench -- claims`).
 */
import { WARM_POOL_COALESCE_MS } from '../../contract/index.js';

/** What {@link PoolWakeups.wake} did: sent the signal, or left it to one sent just before. */
export type PoolWake = 'sent' | 'coalesced';

/**
 * Remembers, per pool workflow id, when this worker last began a claim's signal to it.
 *
 * Why leaving a signal out loses no refill: the pool woken by the earlier signal waits
 * `windowMs` before it reconciles, so that reconcile lists the later claim too. When the earlier
 * signal reached a pool already waiting to reconcile (woken by another worker, or by a signal of
 * a window before), its reconcile may start sooner and miss the claim; the pool then makes the
 * missing pod at its next resync (`WARM_POOL_RESYNC_MS.starting`, 1 s, while the pods that
 * reconcile made start). A signal that failed is forgotten, so the next claim sends again.
 */
export class PoolWakeups {
  private readonly lastSentAtMs = new Map<string, number>();

  /**
   * @param windowMs how long after a signal to a pool the next claim's is left out, in ms
   * @param now the clock, epoch ms (tests pass their own)
   */
  constructor(
    private readonly windowMs = WARM_POOL_COALESCE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Sends `send` (the signal to the pool workflow `poolWorkflowId`) unless this worker began one
   * to that pool less than `windowMs` ago.
   * @returns `sent`, or `coalesced` when it was left out
   * @throws what `send` throws (and forgets the attempt, so the next claim sends)
   */
  async wake(poolWorkflowId: string, send: () => Promise<void>): Promise<PoolWake> {
    const nowMs = this.now();
    const last = this.lastSentAtMs.get(poolWorkflowId);
    if (last !== undefined && nowMs - last < this.windowMs) return 'coalesced';
    this.lastSentAtMs.set(poolWorkflowId, nowMs);
    try {
      await send();
    } catch (err) {
      if (this.lastSentAtMs.get(poolWorkflowId) === nowMs) this.lastSentAtMs.delete(poolWorkflowId);
      throw err;
    }
    return 'sent';
  }
}
