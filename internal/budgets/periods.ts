/**
 * Budget periods: the calendar day and month in the configured time zone. A daily limit resets at
 * local midnight, a monthly one at local midnight of the 1st, DST shifts included.
 */

/** A budget period. */
export type Period = "daily" | "monthly";

const fmts = new Map<string, Intl.DateTimeFormat>();

function partsOf(
  t: number,
  timeZone: string,
): { y: number; m: number; d: number; h: number; min: number; s: number } {
  let f = fmts.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    fmts.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, Number(x.value)]));
  return { y: p.year!, m: p.month!, d: p.day!, h: p.hour! % 24, min: p.minute!, s: p.second! };
}

/** Offset of `timeZone` from UTC at instant `t`, in ms (local wall clock minus UTC). */
function offsetAt(t: number, timeZone: string): number {
  const p = partsOf(t, timeZone);
  const wall = Date.UTC(p.y, p.m - 1, p.d, p.h, p.min, p.s);
  return wall - Math.floor(t / 1000) * 1000;
}

/** The UTC instant of local wall time y-m-d 00:00 in `timeZone`. */
function localMidnight(y: number, m: number, d: number, timeZone: string): number {
  const wall = Date.UTC(y, m - 1, d);
  // Two passes: the offset at the guess may differ from the offset at the answer across a DST change.
  let t = wall - offsetAt(wall, timeZone);
  t = wall - offsetAt(t, timeZone);
  return t;
}

/** Start (inclusive) and end (exclusive, the reset time) of the period containing `now`. */
export function periodBounds(period: Period, now: number, timeZone: string): { start: number; end: number } {
  const p = partsOf(now, timeZone);
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
  const p = partsOf(t, timeZone);
  const two = (n: number): string => String(n).padStart(2, "0");
  return `${p.y}-${two(p.m)}-${two(p.d)} ${two(p.h)}:${two(p.min)} (${timeZone})`;
}
