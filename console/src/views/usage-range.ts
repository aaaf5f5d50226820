/** Which days the usage chart shows (pure: the chart's zoom, tested in test/gateway/console-parts.test.ts). */

/** The chart shows at least this many days, ending today. */
export const MIN_DAYS = 7;

/**
 * The index of the first day the chart shows: the first day with usage, so a young install is not 29
 * empty slots and one bar; at least {@link MIN_DAYS} days (all of them when there are fewer).
 */
export function firstShownDay(calls: readonly number[]): number {
  const first = calls.findIndex((c) => c > 0);
  if (first < 0) return 0;
  return Math.max(0, Math.min(first, calls.length - MIN_DAYS));
}
