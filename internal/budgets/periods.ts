/**
 * Budget periods: the calendar day and month in the configured time zone. A daily limit resets at
 * local midnight, a monthly one at local midnight of the 1st, DST shifts included.
 */
import { zonedParts, zoneOffset } from "../config/zoned-time.js";

/** A budget period. */
export type Period = "daily" | "monthly";

/** The UTC instant of local wall time y-m-d 00:00 in `timeZone`. */
function localMidnight(y: number, m: number, d: number, timeZone: string): number {
  const wall = Date.UTC(y, m - 1, d);
  // Two passes: the offset at the guess may differ from the offset at the answer across a DST change.
  let t = wall - zoneOffset(wall, timeZone);
  t = wall - zoneOffset(t, timeZone);
  return t;
}

/** Start (inclusive) and end (exclusive, the reset time) of the period containing `now`. */
export function periodBounds(period: Period, now: number, timeZone: string): { start: number; end: number } {
  const p = zonedParts(now, timeZone);
  if (period === "daily") {
    const start = localMidnight(p.y, p.m, p.d, timeZone);
    const next = new Date(Date.UTC(p.y, p.m - 1, p.d + 1));
    return {
      start,
      end: localMidnight(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), timeZone),
    };
  }
  const start = localMidnight(p.y, p.m, 1, timeZone);
  const next = new Date(Date.UTC(p.y, p.m, 1));
  return { start, end: localMidnight(next.getUTCFullYear(), next.getUTCMonth() + 1, 1, timeZone) };
}

/** `2026-11-25 00:00 (Europe/Berlin)`: a reset time as the owner reads it. */
export function formatReset(t: number, timeZone: string): string {
  const p = zonedParts(t, timeZone);
  const two = (n: number): string => String(n).padStart(2, "0");
  return `${p.y}-${two(p.m)}-${two(p.d)} ${two(p.h)}:${two(p.min)} (${timeZone})`;
}
