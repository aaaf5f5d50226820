/**
 * Wall-clock parts of an instant in an IANA time zone, and the zone's offset from UTC: the one place
 * that asks Intl (cron schedules, budget periods, memory note dates, the prompt's clock, active hours,
 * the current_time tool). A formatter costs ~0.3 ms to build, so one is kept per zone.
 *
 * Why UTC never touches Intl: the first Intl formatter maps ICU's time-zone and locale data out of the
 * node binary, ~7 MB of file pages plus ~2.5 MB of heap that stay resident for the life of the
 * process (measured: `VmRSS` 62 -> 71 MB for one `new Intl.DateTimeFormat`). A daemon on a UTC
 * machine (most servers) computes everything with `Date`'s UTC getters instead; any other zone loads
 * ICU on first use, as before. Invariant: the fast path returns exactly what Intl returns for UTC
 * (checked against Intl by zoned-time.test.ts).
 */
import { readlinkSync } from "node:fs";

/** Local calendar date and time of an instant (month 1-12, hour 0-23). */
export interface ZonedParts {
  y: number;
  m: number;
  d: number;
  h: number;
  min: number;
  s: number;
}

/** Names ICU resolves to UTC itself (no offset, no daylight saving). */
const UTC_ZONES = new Set([
  "UTC",
  "Etc/UTC",
  "Etc/UCT",
  "UCT",
  "Etc/Universal",
  "Universal",
  "Etc/Zulu",
  "Zulu",
  "Etc/GMT",
  "GMT",
  "Etc/GMT0",
  "GMT0",
  "Etc/GMT+0",
  "Etc/GMT-0",
  "GMT+0",
  "GMT-0",
  "Etc/Greenwich",
  "Greenwich",
]);

/** True for a name of the UTC zone itself: computed without Intl. */
export const isUtcZone = (tz: string): boolean => UTC_ZONES.has(tz);

/**
 * The machine's time zone, as `Intl.DateTimeFormat().resolvedOptions().timeZone` reports it, without
 * loading ICU when the machine runs on UTC: `TZ` if set, else the `/etc/localtime` link (where ICU
 * looks too). Anything that is not plainly UTC is asked of Intl.
 */
export function systemTimeZone(): string {
  const env = process.env.TZ;
  let name: string | undefined = env?.replace(/^:/, "");
  if (env === undefined) {
    try {
      name = /zoneinfo\/(.+)$/.exec(readlinkSync("/etc/localtime"))?.[1];
    } catch {
      name = undefined;
    }
  }
  if (name !== undefined && isUtcZone(name)) return "UTC";
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
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
  if (isUtcZone(timeZone)) {
    const d = new Date(t);
    return {
      y: d.getUTCFullYear(),
      m: d.getUTCMonth() + 1,
      d: d.getUTCDate(),
      h: d.getUTCHours(),
      min: d.getUTCMinutes(),
      s: d.getUTCSeconds(),
    };
  }
  const p: Record<string, number> = {};
  for (const x of formatFor(timeZone).formatToParts(t)) p[x.type] = Number(x.value);
  // Some engines print midnight as hour 24 even with h23.
  return { y: p.year!, m: p.month!, d: p.day!, h: p.hour! % 24, min: p.minute!, s: p.second! };
}

/** Offset (ms) of `timeZone` from UTC at instant `t`: local wall clock minus UTC. */
export function zoneOffset(t: number, timeZone: string): number {
  if (isUtcZone(timeZone)) return 0;
  const p = zonedParts(t, timeZone);
  return Date.UTC(p.y, p.m - 1, p.d, p.h, p.min, p.s) - Math.floor(t / 1000) * 1000;
}

/** True for an IANA time zone name the runtime knows. */
export function isTimeZone(tz: string): boolean {
  if (isUtcZone(tz)) return true;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Short English weekday names, Sunday first, as the en-US and en-CA formats print them. */
export const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;

/** Weekday (0 = Sunday) of a calendar date. */
export const weekdayOf = (p: Pick<ZonedParts, "y" | "m" | "d">): number =>
  new Date(Date.UTC(p.y, p.m - 1, p.d)).getUTCDay();

/** Two digits, for dates and times. */
export const pad2 = (n: number): string => String(n).padStart(2, "0");
