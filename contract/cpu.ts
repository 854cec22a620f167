/**
 * CPU amounts as Kubernetes spells them. A request's `cpu` is a Kubernetes quantity: a number
 * of cores (`2`, `0.5`, JSON `0.5`) or millicores (`500m`). Kubernetes' finest CPU step is one
 * millicore, so the service keeps CPU as whole millicores (the store) or as cores with at most
 * three decimals (the contract's `cpu`), and both convert without loss.
 *
 * Grammar and canonical form: Kubernetes, k8s.io/apimachinery `resource.Quantity`
 * (`<signedNumber><suffix>`, the suffix a binary SI unit `Ki`…`Ei`, a decimal SI unit
 * `n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E` (its suffix.go), or an exponent `e<n>`/`E<n>`), and "Resource units in
 * Kubernetes" (CPU precision finer than `1m` is not allowed). One departure: the binary
 * suffixes, which Kubernetes reads for any quantity, are refused for CPU (`"1Gi"` is a memory
 * amount sent in the wrong field, not 1073741824 cores). Pure: exact BigInt arithmetic, no Node
 * imports, so the workflow bundle may import it.
 */

/** Millicores in one core. */
export const MILLICORES_PER_CORE = 1000;

/** The outcome of {@link parseCpuQuantity}: whole millicores, or why the value is not one. */
export type CpuParse = { millicores: number } | { problem: string };

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$/;
const DECIMAL_SUFFIX_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIXES = new Set(['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei']);
/** Exponents past this are refused rather than computed (a quantity of 10^100 cores). */
const MAX_EXPONENT = 100;

/** The answer to a binary suffix (`Ki` … `Ei`): a unit of bytes, not of CPU. */
const BYTES_NOT_CPU = (suffix: string) =>
  `must be a CPU quantity such as 0.5, 2 or 500m (${suffix} is a unit of bytes, for memory or disk)`;

const FINER_THAN_MILLICORES = 'must be a whole number of millicores (1m is 0.001 cores)';

/** What a CPU value may look like, for messages. */
export const CPU_FORMS = 'a Kubernetes CPU quantity: cores (0.5, 2) or millicores ("500m")';

/**
 * Reads a CPU amount: a JSON number of cores, or a string Kubernetes quantity.
 * @param value a number (cores; read as its shortest decimal spelling, so `0.5` is `"0.5"`) or
 *   a string (`"2"`, `"0.5"`, `"500m"`, `"1e-1"`, …)
 * @param maxCores the largest amount accepted, in cores
 * @returns `{ millicores }` (a positive integer), or `{ problem }`: a message naming what is
 *   wrong, to follow the field's name (`must be …`); a binary suffix (`"1Gi"`) is refused
 */
export function parseCpuQuantity(value: unknown, maxCores: number): CpuParse {
  if (typeof value !== 'number' && typeof value !== 'string') {
    return { problem: `must be ${CPU_FORMS}` };
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    return { problem: `must be ${CPU_FORMS}` };
  }
  const match = QUANTITY.exec(String(value));
  if (!match) return { problem: `must be ${CPU_FORMS}` };
  const [, sign = '', number = '', suffix = ''] = match;
  if (BINARY_SUFFIXES.has(suffix)) return { problem: BYTES_NOT_CPU(suffix) };
  const [whole = '', fraction = ''] = number.split('.');
  // value = mantissa * 10^exponent; millicores = value * 10^3
  let exponent = 3 - fraction.length;
  if (/^[eE]/.test(suffix)) exponent += Number(suffix.slice(1));
  else exponent += DECIMAL_SUFFIX_EXPONENT[suffix] ?? 0;
  if (exponent > MAX_EXPONENT) return { problem: `must be at most ${maxCores}` };
  if (exponent < -MAX_EXPONENT) return { problem: FINER_THAN_MILLICORES };
  const mantissa = BigInt(`${whole}${fraction}` || '0');
  if (mantissa === 0n || sign === '-') return { problem: 'must be more than 0' };
  let numerator = mantissa;
  let denominator = 1n;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator = 10n ** BigInt(-exponent);
  if (numerator % denominator !== 0n) {
    return { problem: FINER_THAN_MILLICORES };
  }
  const millicores = numerator / denominator;
  if (millicores > BigInt(maxCores * MILLICORES_PER_CORE)) {
    return { problem: `must be at most ${maxCores}` };
  }
  return { millicores: Number(millicores) };
}

/** Cores (at most three decimals) -> whole millicores. */
export function millicoresOf(cores: number): number {
  return Math.round(cores * MILLICORES_PER_CORE);
}

/** Whole millicores -> cores (`500` -> `0.5`). */
export function coresOf(millicores: number): number {
  return millicores / MILLICORES_PER_CORE;
}

/**
 * The canonical Kubernetes quantity of a CPU amount, as the apiserver writes it back: whole cores
 * without a suffix (`"2"`), anything else in millicores (`"500m"`, `"1500m"`).
 * @param cores cores, at most three decimals
 */
export function cpuQuantity(cores: number): string {
  const millicores = millicoresOf(cores);
  return millicores % MILLICORES_PER_CORE === 0
    ? String(millicores / MILLICORES_PER_CORE)
    : `${millicores}m`;
}
