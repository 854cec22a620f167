/**
 * waitUntil (tools/wait-until.ts), the one polling helper of the tests and the bench: what
 * counts as "not yet", what it returns, and the error that names what was awaited.
 */
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../tools/wait-until.js';

describe('waitUntil', () => {
  it('returns the first value that is neither false nor undefined, polling until then', async () => {
    let calls = 0;
    const found = await waitUntil(() => (++calls === 3 ? { id: 'op_1' } : undefined), {
      intervalMs: 1,
    });
    expect(found).toEqual({ id: 'op_1' });
    expect(calls).toBe(3);
  });

  it('takes a boolean condition, sync or async, and answers true', async () => {
    let calls = 0;
    expect(await waitUntil(async () => ++calls === 2, { intervalMs: 1 })).toBe(true);
  });

  it('counts 0, null and an empty string as values', async () => {
    expect(await waitUntil(() => 0)).toBe(0);
    expect(await waitUntil(() => null)).toBeNull();
    expect(await waitUntil(() => '')).toBe('');
  });

  it('throws after timeoutMs, naming what, the time waited and the last value', async () => {
    const error = await waitUntil(() => false, {
      timeoutMs: 50,
      intervalMs: 10,
      what: 'the pod deleted',
    }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      /^the pod deleted not met within 50 ms \(waited \d+ ms; last value: false\)$/,
    );
  });

  it('throws an error of the condition at once, without retrying', async () => {
    let calls = 0;
    const failing = () => {
      calls++;
      throw new Error('GET /v1/operations/op_1 answered 500');
    };
    await expect(waitUntil(failing, { timeoutMs: 5_000 })).rejects.toThrow('answered 500');
    expect(calls).toBe(1);
  });
});
