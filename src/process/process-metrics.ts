/**
 * The process's own Prometheus metrics (`process_*`: CPU, memory, open file descriptors;
 * `nodejs_*`: event loop lag, heap, GC), from prom-client's default collectors. A process
 * registers them on exactly one registry, so a scrape of all its endpoints counts them once:
 * the API's in `npm run api` and the embedded stack, the worker's in `npm run worker`.
 */
import { collectDefaultMetrics, type Registry } from 'prom-client';

let collectedOn: Registry | undefined;

/**
 * Starts collecting the process metrics on `registry`; later calls (any registry) do nothing.
 * @returns the registry that carries them
 */
export function collectProcessMetrics(registry: Registry): Registry {
  if (!collectedOn) {
    collectDefaultMetrics({ register: registry });
    collectedOn = registry;
  }
  return collectedOn;
}
