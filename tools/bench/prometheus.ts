/**
 * Reads a Prometheus text exposition (the worker's `/metrics`, which appends the Temporal SDK
 * Runtime's own metrics, and the Temporal dev server's `--metrics-port`) into samples the
 * bench can sum. Format: Prometheus, "Exposition formats" (text 0.0.4): `name{k="v",...} value`.
 */

/** One sample: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a text exposition; comments and unparsable lines are skipped. */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The sum of the samples named `name` whose labels hold every pair of `where` (a value may be
 * a predicate); 0 when none matches.
 */
export function sumOf(
  samples: Sample[],
  name: string,
  where: Record<string, string | ((value: string) => boolean)> = {},
): number {
  let sum = 0;
  for (const sample of samples) {
    if (sample.name !== name) continue;
    const matches = Object.entries(where).every(([key, wanted]) => {
      const value = sample.labels[key] ?? '';
      return typeof wanted === 'function' ? wanted(value) : value === wanted;
    });
    if (matches && Number.isFinite(sample.value)) sum += sample.value;
  }
  return sum;
}

/**
 * Per label value: the sum of `name` grouped by label `by` (e.g. requests by `operation`).
 */
export function sumBy(samples: Sample[], name: string, by: string): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const sample of samples) {
    if (sample.name !== name || !Number.isFinite(sample.value)) continue;
    const key = sample.labels[by] ?? '';
    sums[key] = (sums[key] ?? 0) + sample.value;
  }
  return sums;
}

/**
 * Fetches and parses `url`: up to 3 tries of 15 s each (a loaded worker answers `/metrics`
 * slowly; its SDK metrics are gathered on the same event loop as its activities).
 * @throws the last fetch error, or Error when the answer is not 200
 */
export async function scrape(url: string): Promise<Sample[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
      if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
      return parseSamples(await response.text());
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}
