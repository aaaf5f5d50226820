import { describe, expect, it } from "vitest";
import { formatReset, periodBounds } from "./periods.js";

describe("budget periods", () => {
  it("a day runs from local midnight to local midnight", () => {
    const now = Date.UTC(2026, 2, 10, 22, 30); // 23:30 in Berlin (UTC+1)
    const b = periodBounds("daily", now, "Europe/Berlin");
    expect(new Date(b.start).toISOString()).toBe("2026-03-09T23:00:00.000Z");
    expect(new Date(b.end).toISOString()).toBe("2026-03-10T23:00:00.000Z");
    expect(formatReset(b.end, "Europe/Berlin")).toBe("2026-03-11 00:00 (Europe/Berlin)");
  });

  it("follows a DST change: the day of the spring change is 23 hours long", () => {
    const now = Date.UTC(2026, 2, 29, 12); // Berlin switches to UTC+2 on 2026-03-29
    const b = periodBounds("daily", now, "Europe/Berlin");
    expect(new Date(b.start).toISOString()).toBe("2026-03-28T23:00:00.000Z");
    expect(new Date(b.end).toISOString()).toBe("2026-03-29T22:00:00.000Z");
  });

  it("a month resets at local midnight of the 1st, December included", () => {
    const b = periodBounds("monthly", Date.UTC(2026, 11, 31, 20), "America/New_York");
    expect(new Date(b.start).toISOString()).toBe("2026-12-01T05:00:00.000Z");
    expect(new Date(b.end).toISOString()).toBe("2027-01-01T05:00:00.000Z");
  });
});
