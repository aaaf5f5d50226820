/** Local calendar dates for memory notes and transcript turns. */

import { pad2, zonedParts } from "../config/zoned-time.js";

/** `YYYY-MM-DD` and `HH:MM` of an instant in a time zone. */
export function localDateTime(ms: number, timeZone: string): { date: string; time: string } {
  const p = zonedParts(ms, timeZone);
  return { date: `${p.y}-${pad2(p.m)}-${pad2(p.d)}`, time: `${pad2(p.h)}:${pad2(p.min)}` };
}
