/** Local calendar dates for memory notes and transcript turns. */

// Building an Intl.DateTimeFormat costs ~0.3 ms; indexing 10,000 turns must not build 10,000.
const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    formats.set(timeZone, f);
  }
  return f;
}

/** `YYYY-MM-DD` and `HH:MM` of an instant in a time zone. */
export function localDateTime(ms: number, timeZone: string): { date: string; time: string } {
  const parts: Record<string, string> = {};
  for (const p of formatFor(timeZone).formatToParts(ms)) parts[p.type] = p.value;
  return { date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}` };
}
