/**
 * Wall-clock parts of an instant in an IANA time zone, and the zone's offset from UTC: the one place
 * that asks Intl (cron schedules, budget periods, memory note dates, the current_time tool). A
 * formatter costs ~0.3 ms to build, so one is kept per zone.
 */

/** Local calendar date and time of an instant (month 1-12, hour 0-23). */
export interface ZonedParts {
  y: number;
  m: number;
  d: number;
  h: number;
  min: number;
  s: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
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
    formats.set(timeZone, f);
  }
  return f;
}

/** The wall-clock parts of instant `t` (ms) in `timeZone`. Throws RangeError for an unknown zone. */
export function zonedParts(t: number, timeZone: string): ZonedParts {
  const p: Record<string, number> = {};
  for (const x of formatFor(timeZone).formatToParts(t)) p[x.type] = Number(x.value);
  // Some engines print midnight as hour 24 even with h23.
  return { y: p.year!, m: p.month!, d: p.day!, h: p.hour! % 24, min: p.minute!, s: p.second! };
}

/** Offset (ms) of `timeZone` from UTC at instant `t`: local wall clock minus UTC. */
export function zoneOffset(t: number, timeZone: string): number {
  const p = zonedParts(t, timeZone);
  return Date.UTC(p.y, p.m - 1, p.d, p.h, p.min, p.s) - Math.floor(t / 1000) * 1000;
}

/** True for an IANA time zone name the runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Two digits, for dates and times. */
export const pad2 = (n: number): string => String(n).padStart(2, "0");
