import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configFromObject } from "../../config/load.js";
import type { Config } from "../../config/schema.js";
import { FakeClock } from "../../core/clock.js";
import { openDatabase, type Db } from "../../store/db.js";
import { allMigrations } from "../../daemon/migrations.js";
import type { Usage } from "../../models/types.js";
import { UsageTracker } from "./usage-tracker.js";

let dir: string;
let db: Db;
let config: Config;
let clock: FakeClock;
let tracker: UsageTracker;

const u = (input: number, output: number, cacheRead = 0): Usage => ({
  input,
  output,
  cacheRead,
  cacheWrite: 0,
  reasoning: 0,
  total: input + output,
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "familiar-usage-"));
  db = openDatabase(dir, { migrations: allMigrations });
  config = configFromObject(
    {
      timezone: "UTC",
      models: { pricing: { "openai/gpt-4o": { input: 2.5, output: 10, cache_read: 1.25 } } },
    },
    dir,
  );
  clock = new FakeClock(Date.UTC(2026, 0, 1, 23, 30));
  tracker = new UsageTracker({ db, config: () => config, clock });
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("UsageTracker", () => {
  it("records calls with cost from models.pricing and sums per session, key, request and model", () => {
    const r1 = tracker.record({
      sessionId: "s1",
      sessionKey: "agent:main:telegram:dm:1",
      agentId: "main",
      provider: "openai",
      model: "gpt-4o",
      requestId: "req-a",
      usage: u(1_000_000, 100_000, 400_000),
    });
    // 600k uncached * 2.5 + 400k cached * 1.25 + 100k out * 10, per 1M tokens
    expect(r1.cost).toBeCloseTo(1.5 + 0.5 + 1.0, 10);
    const r2 = tracker.record({
      sessionId: "s2",
      sessionKey: "agent:main:telegram:dm:1",
      agentId: "main",
      provider: "local",
      model: "llama3.1",
      requestId: "req-b",
      usage: u(500, 50),
    });
    // No price (local model, not in the shipped table): counted at the default price, and said so.
    expect(r2).toMatchObject({ source: "default" });
    expect(r2.cost).toBeCloseTo((500 * 5 + 50 * 15) / 1e6, 12);

    expect(tracker.session("s1")).toMatchObject({
      calls: 1,
      input: 1_000_000,
      output: 100_000,
      cacheRead: 400_000,
    });
    const key = tracker.sessionKey("agent:main:telegram:dm:1");
    expect(key).toMatchObject({ calls: 2, input: 1_000_500, unpricedCalls: 1 });
    // The call without a price counts at budgets.default_price ($5 in / $15 out per 1M by default),
    // as the budgets count it: 500 * 5 + 50 * 15 per 1M = $0.00325, marked by unpricedCalls.
    expect(key.cost).toBeCloseTo(3 + 0.00325, 10);
    expect(tracker.requests(["req-b", "req-b", "missing"])).toMatchObject({
      calls: 1,
      input: 500,
      output: 50,
    });
    expect(tracker.byModel().map((m) => `${m.provider}/${m.model}:${m.calls}`)).toEqual([
      "openai/gpt-4o:1",
      "local/llama3.1:1",
    ]);
    expect(
      tracker
        .bySession()
        .map((s) => s.sessionId)
        .sort(),
    ).toEqual(["s1", "s2"]);
  });

  it("groups per day in the configured time zone and filters by time", async () => {
    tracker.record({ provider: "openai", model: "gpt-4o", usage: u(10, 1) }); // 2026-01-01 23:30 UTC
    await clock.advance(60 * 60_000);
    tracker.record({ provider: "openai", model: "gpt-4o", usage: u(20, 2) }); // 2026-01-02 00:30 UTC
    expect(tracker.byDay().map((d) => [d.day, d.input])).toEqual([
      ["2026-01-01", 10],
      ["2026-01-02", 20],
    ]);
    expect(tracker.byDay(0, "Asia/Tokyo").map((d) => [d.day, d.input])).toEqual([["2026-01-02", 30]]);
    config = { ...config, timezone: "America/New_York" };
    expect(tracker.byDay().map((d) => [d.day, d.input])).toEqual([["2026-01-01", 30]]);
    expect(tracker.aggregate(Date.UTC(2026, 0, 2))).toMatchObject({ calls: 1, input: 20, total: 22 });
    expect(tracker.aggregate()).toMatchObject({ calls: 2, input: 30, output: 3, total: 33 });
  });

  it("survives a reopen of the database", () => {
    tracker.record({ sessionId: "s", provider: "openai", model: "gpt-4o", usage: u(7, 3) });
    db.close();
    db = openDatabase(dir, { migrations: allMigrations });
    const again = new UsageTracker({ db, config: () => config });
    expect(again.session("s")).toMatchObject({ calls: 1, input: 7, output: 3, total: 10 });
  });

  it("answers zeros for an empty table", () => {
    expect(tracker.aggregate()).toEqual({
      calls: 0,
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
      total: 0,
      cost: 0,
      unpricedCalls: 0,
    });
    expect(tracker.byDay()).toEqual([]);
  });
});
