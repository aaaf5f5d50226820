/**
 * Small statistics helpers for the benchmarks: percentiles over samples and the spread of a figure
 * across repeated runs. Percentiles use the nearest-rank method (no interpolation), so p99 of 100
 * samples is the 99th smallest.
 */

/** Summary of one sample set (milliseconds unless the caller says otherwise). */
export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of already sorted values; `p` in 0..100. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Percentiles, extremes and mean of `values`. */
export function summarize(values: readonly number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return {
    n: s.length,
    min: s[0] ?? Number.NaN,
    p50: percentileSorted(s, 50),
    p90: percentileSorted(s, 90),
    p99: percentileSorted(s, 99),
    max: s[s.length - 1] ?? Number.NaN,
    mean,
  };
}

/** Median of `values` (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A figure measured in several runs: the median and the spread (min..max) across runs. */
export interface Repeated {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

/** Median and min..max of per-run figures. */
export function repeated(runs: readonly number[]): Repeated {
  return {
    median: median(runs),
    min: Math.min(...runs),
    max: Math.max(...runs),
    runs: runs.map((r) => round(r, 3)),
  };
}

/** Rounds to `digits` decimals (for printing and JSON). */
export function round(v: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** `12.3 (11.9-13.0)`: a repeated figure for the table. */
export function fmtRepeated(r: Repeated, digits = 1): string {
  return `${r.median.toFixed(digits)} (${r.min.toFixed(digits)}-${r.max.toFixed(digits)})`;
}
