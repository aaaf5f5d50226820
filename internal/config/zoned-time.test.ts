import { execFileSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { formatNow } from "../agent/prompt.js";
import { localMinutes } from "../heartbeat/active-hours.js";
import { nextRunAfter, parseSchedule } from "./schedule.js";
import { isTimeZone, isUtcZone, systemTimeZone, zonedParts, zoneOffset } from "./zoned-time.js";

// Instants spread over years, months, days and both sides of midnight and of DST changes elsewhere.
const instants = Array.from(
  { length: 400 },
  (_, i) => Date.UTC(2024, 0, 1) + i * 86_400_000 * 2.37 + i * 61_000,
);

/** What Intl itself says, for comparison with the fast path. */
function intlParts(t: number, timeZone: string): Record<string, string> {
  const f = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    weekday: "short",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hour12: false,
  });
  return Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
}

const realIntlDtf = Intl.DateTimeFormat;
afterEach(() => {
  Intl.DateTimeFormat = realIntlDtf;
});

describe("zoned time", () => {
  it("every UTC alias is a zone Intl knows and resolves to UTC", () => {
    for (const z of [
      "UTC",
      "Etc/UTC",
      "Etc/UCT",
      "Universal",
      "Zulu",
      "Etc/GMT",
      "GMT",
      "Etc/GMT+0",
      "Greenwich",
    ]) {
      expect(isUtcZone(z)).toBe(true);
      expect(new Intl.DateTimeFormat("en", { timeZone: z }).resolvedOptions().timeZone).toBe("UTC");
    }
    expect(isUtcZone("Europe/London")).toBe(false);
  });

  it("computes UTC parts, offsets and prompt clocks exactly as Intl does", () => {
    for (const t of instants) {
      const p = intlParts(t, "UTC");
      expect(zonedParts(t, "Etc/UTC")).toEqual({
        y: Number(p.year),
        m: Number(p.month),
        d: Number(p.day),
        h: Number(p.hour) % 24,
        min: Number(p.minute),
        s: Number(p.second),
      });
      expect(zoneOffset(t, "UTC")).toBe(0);
      expect(formatNow(t, "UTC")).toBe(
        `${p.weekday} ${p.year}-${p.month}-${p.day} ${p.hour === "24" ? "00" : p.hour}:${p.minute}`,
      );
      expect(localMinutes(t, "UTC")).toBe((Number(p.hour) % 24) * 60 + Number(p.minute));
    }
  });

  it("formats other zones through Intl, DST changes included", () => {
    for (const tz of ["Europe/Berlin", "America/St_Johns", "Asia/Kolkata", "Pacific/Chatham"]) {
      for (const t of instants) {
        const p = intlParts(t, tz);
        expect(formatNow(t, tz)).toBe(
          `${p.weekday} ${p.year}-${p.month}-${p.day} ${p.hour === "24" ? "00" : p.hour}:${p.minute}`,
        );
        expect(localMinutes(t, tz)).toBe((Number(p.hour) % 24) * 60 + Number(p.minute));
      }
    }
  });

  it("never builds an Intl formatter for UTC (ICU data stays unmapped)", () => {
    Intl.DateTimeFormat = function () {
      throw new Error("Intl used for UTC");
    } as unknown as typeof Intl.DateTimeFormat;
    const t = Date.UTC(2026, 10, 25, 23, 59, 30);
    expect(isTimeZone("UTC")).toBe(true);
    expect(zonedParts(t, "UTC").h).toBe(23);
    expect(formatNow(t + 60_000 * 7, "UTC")).toBe("Thu 2026-11-26 00:06");
    expect(localMinutes(t, "Etc/UTC")).toBe(23 * 60 + 59);
  });

  it("reports the machine's zone as Intl does, for TZ unset, UTC aliases and other zones", () => {
    const probe = `import { systemTimeZone } from ${JSON.stringify(new URL("./zoned-time.ts", import.meta.url).pathname)};
      console.log(JSON.stringify([systemTimeZone(), Intl.DateTimeFormat().resolvedOptions().timeZone]));`;
    for (const tz of [undefined, "UTC", "Etc/UTC", ":UTC", "Europe/Berlin", "America/New_York"]) {
      const env = { ...process.env };
      if (tz === undefined) delete env.TZ;
      else env.TZ = tz;
      const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", probe], {
        env,
        encoding: "utf8",
      });
      const [ours, intl] = JSON.parse(out.trim().split("\n").pop()!) as [string, string];
      expect(ours, `TZ=${tz}`).toBe(intl);
    }
    expect(isTimeZone(systemTimeZone())).toBe(true);
  });
});

describe("cron schedules in UTC", () => {
  it("fire at the same instants as croner's own time-zone path, without Intl", async () => {
    const { Cron } = await import("croner");
    const exprs = [
      "0 7 * * *",
      "30 9 1 * *",
      "0 18 * * 5",
      "*/15 * * * *",
      "0 0 29 2 *",
      "15 10 * * 1-5",
      "0 30 2 * * *",
    ];
    const from = Date.UTC(2026, 0, 30, 23, 59, 59);
    const expected = exprs.map((e) =>
      new Cron(e, { timezone: "UTC", paused: true, mode: "5-or-6-parts" })
        .nextRuns(5, new Date(from))
        .map((d) => d.getTime()),
    );
    Intl.DateTimeFormat = function () {
      throw new Error("Intl used for UTC");
    } as unknown as typeof Intl.DateTimeFormat;
    const ours = exprs.map((e) => {
      const s = parseSchedule({ cron: e }, "Etc/UTC");
      const runs: number[] = [];
      let t = from;
      for (let i = 0; i < 5; i++) runs.push((t = nextRunAfter(s, t, from)!));
      return runs;
    });
    expect(ours).toEqual(expected);
  });
});
