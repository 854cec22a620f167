/**
 * A store that fails some calls on demand, for the suites that attack the readiness wait
 * (test/readiness-wait-attacks.test.ts, test/readiness-wait-pages.test.ts).
 */
import type { Store } from '../../src/store/index.js';

/**
 * Wraps a store (as `TestStackOptions.activityStore` does) so that the calls `names` reject with
 * `store unreachable (<name>)` while `down.on` holds; every other call, and these while
 * `down.on` is false, reach the real store.
 */
export function failingStore(names: Array<keyof Store>, down: { on: boolean }) {
  return (store: Store): Store => {
    const wrapped = Object.create(store) as Store;
    for (const name of names) {
      const real = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
      Object.assign(wrapped, {
        [name]: (...args: unknown[]) =>
          down.on ? Promise.reject(new Error(`store unreachable (${name})`)) : real(...args),
      });
    }
    return wrapped;
  };
}
