/**
 * The operation notifier's publisher (src/store/operation-notifier.ts): what it hands to
 * `pg_notify`, observed through its `send` (PostgreSQL's side is test/store.test.ts, which counts
 * what a LISTEN connection received).
 */
import { describe, expect, it } from 'vitest';
import {
  batchPayloads,
  createOperationNotifier,
  LISTEN_RETRY_DELAY_MS,
  MAX_PAYLOAD_BYTES,
  OPERATION_CHANNEL,
} from '../src/store/operation-notifier.js';
import { waitUntil } from '../tools/wait-until.js';

const opId = (n: number) => `op_${String(n).padStart(20, '0')}`;

/** A `send` that records each call and answers only when `release()` is called. */
function gatedSend() {
  const sent: Array<{ channel: string; payload: string }> = [];
  let open: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => (open = resolve));
  return {
    sent,
    release() {
      open();
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    async send(channel: string, payload: string) {
      sent.push({ channel, payload });
      await gate;
    },
  };
}

describe('operation notifier publisher', () => {
  it('publishes the ids committed while a notification is in flight as one payload', async () => {
    const fake = gatedSend();
    const notifier = createOperationNotifier({ send: fake.send });
    for (let n = 0; n < 100; n++) notifier.notify(opId(n));
    expect(fake.sent.map((s) => s.payload)).toEqual([opId(0)]);
    fake.release();
    await waitUntil(() => fake.sent.length === 2);
    expect(fake.sent[1]).toEqual({
      channel: OPERATION_CHANNEL,
      payload: Array.from({ length: 99 }, (_, n) => opId(n + 1)).join(','),
    });
    fake.release();
    await notifier.close();
    expect(fake.sent).toHaveLength(2);
  });

  it('keeps every payload under PostgreSQL’s 8000-byte limit and loses no id', () => {
    const ids = Array.from({ length: 1_000 }, (_, n) => opId(n));
    const payloads = batchPayloads(ids);
    expect(payloads.length).toBeGreaterThan(1);
    for (const payload of payloads)
      expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    expect(payloads.flatMap((payload) => payload.split(','))).toEqual(ids);
  });

  it('publishes again after a failed send', async () => {
    const sent: string[] = [];
    let failures = 1;
    const notifier = createOperationNotifier({
      send: async (_channel, payload) => {
        sent.push(payload);
        if (failures-- > 0) throw new Error('connection refused');
      },
    });
    notifier.notify(opId(1));
    await waitUntil(() => sent.length === 2, { timeoutMs: LISTEN_RETRY_DELAY_MS * 5 });
    expect(sent).toEqual([opId(1), opId(1)]);
    await notifier.close();
  });

  it('wakes this process’s waiters at once, without a database', async () => {
    const notifier = createOperationNotifier();
    const woken = notifier.waitForChange(opId(7), 5_000);
    notifier.notify(opId(7));
    expect(await woken).toBe(true);
    await notifier.close();
  });
});
