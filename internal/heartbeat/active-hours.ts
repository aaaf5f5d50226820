/**
 * Active hours: the heartbeat only runs between `start` and `end` (HH:MM, wall clock in `timezone`).
 * A window whose end is before its start spans midnight (22:00-06:00); equal start and end mean all day;
 * `end: 24:00` means until midnight.
 */
import { zonedParts } from "../config/zoned-time.js";

export interface ActiveHours {
  start: string;
  end: string;
  timezone?: string | undefined;
}

function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(":").map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
}

/** Minutes since local midnight at instant `t` in `timezone`. */
export function localMinutes(t: number, timezone: string): number {
  const p = zonedParts(t, timezone);
  return p.h * 60 + p.min;
}

/** True when `t` is inside the window (always true without a window). */
export function withinActiveHours(
  t: number,
  hours: ActiveHours | undefined,
  defaultTimezone: string,
): boolean {
  if (!hours) return true;
  const start = minutesOf(hours.start);
  const end = minutesOf(hours.end);
  if (start === end) return true;
  const now = localMinutes(t, hours.timezone ?? defaultTimezone);
  return start < end ? now >= start && now < end : now >= start || now < end;
}
