import { describe, expect, it } from "vitest";
import { nextRunAfter, parseAt, parseSchedule, ScheduleError, scheduleProblem } from "./schedule.js";
import { configFromObject } from "./load.js";
import { ConfigError } from "./errors.js";

const iso = (t: number | undefined): string => (t === undefined ? "none" : new Date(t).toISOString());

describe("schedules", () => {
  it("a 09:00 Europe/Berlin cron fires at 09:00 local across both DST changes of 2026", () => {
    const s = parseSchedule({ cron: "0 9 * * *" }, "Europe/Berlin");
    const spring: string[] = [];
    let t = Date.UTC(2026, 2, 27, 12);
    for (let i = 0; i < 3; i++) spring.push(iso((t = nextRunAfter(s, t, 0)!)));
    expect(spring).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]);
    const autumn: string[] = [];
    t = Date.UTC(2026, 9, 23, 12);
    for (let i = 0; i < 3; i++) autumn.push(iso((t = nextRunAfter(s, t, 0)!)));
    expect(autumn).toEqual([
      "2026-10-24T07:00:00.000Z",
      "2026-10-25T08:00:00.000Z",
      "2026-10-26T08:00:00.000Z",
    ]);
  });

  it("accepts an optional seconds field and a per-job time zone", () => {
    const s = parseSchedule({ cron: "30 0 9 * * *", timezone: "America/New_York" }, "UTC");
    expect(iso(nextRunAfter(s, Date.UTC(2026, 0, 1), 0))).toBe("2026-01-01T14:00:30.000Z");
  });

  it("every counts from its anchor; at is one instant in the owner's zone unless it has an offset", () => {
    const every = parseSchedule({ every: 90 * 60_000 }, "UTC");
    const anchor = Date.UTC(2026, 0, 1);
    expect(iso(nextRunAfter(every, anchor, anchor))).toBe("2026-01-01T01:30:00.000Z");
    expect(iso(nextRunAfter(every, anchor + 100 * 60_000, anchor))).toBe("2026-01-01T03:00:00.000Z");
    expect(parseAt("2026-10-25T09:00", "Europe/Berlin")).toBe(Date.UTC(2026, 9, 25, 8));
    expect(parseAt("2026-10-24T09:00", "Europe/Berlin")).toBe(Date.UTC(2026, 9, 24, 7));
    expect(parseAt("2026-03-29T09:00:00+02:00", "UTC")).toBe(Date.UTC(2026, 2, 29, 7));
    const at = parseSchedule({ at: "2026-03-29T09:00" }, "Europe/Berlin");
    expect(nextRunAfter(at, Date.UTC(2026, 2, 29, 6), 0)).toBe(Date.UTC(2026, 2, 29, 7));
    expect(nextRunAfter(at, Date.UTC(2026, 2, 29, 7), 0)).toBeUndefined();
  });

  it("rejects invalid schedules with a clear error naming the field", () => {
    expect(() => parseSchedule({ cron: "61 * * * *" }, "UTC")).toThrow(ScheduleError);
    expect(scheduleProblem({ cron: "61 * * * *" })).toMatchObject({ field: "cron" });
    expect(scheduleProblem({ cron: "0 9 * * *", timezone: "Mars/Base" })).toMatchObject({
      field: "timezone",
    });
    expect(scheduleProblem({ at: "next tuesday" })).toMatchObject({ field: "at" });
    expect(scheduleProblem({ every: 10 })).toMatchObject({ field: "every" });
    expect(scheduleProblem({ cron: "* * * * *", every: 60_000 })).toMatchObject({ field: "schedule" });
  });

  it("config check rejects a bad job schedule naming the key", () => {
    try {
      configFromObject({ cron: { jobs: [{ id: "r", cron: "0 25 * * *", message: "x" }] } });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toMatch(
        /cron\.jobs\[0\]\.cron: invalid cron expression.*got "0 25 \* \* \*"/,
      );
    }
  });
});
