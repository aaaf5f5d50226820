import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { dailyUsage, dayLabels, topSessions } from "./usage-report.js";

/** budgets.default_price for these tests: 10 input tokens without a price cost $0.01. */
const PRICE = { input: 1000, output: 0 };

let dir: string | undefined;
let db: Db | undefined;
afterEach(() => {
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  db = dir = undefined;
});

function open(): Db {
  dir = mkdtempSync(join(tmpdir(), "familiar-usage-report-"));
  db = openDatabase(dir, { migrations: allMigrations });
  return db;
}

function row(
  d: Db,
  at: string,
  o: {
    key: string;
    agent: string;
    model: string;
    total: number;
    cost: number | null;
    rid: string;
    sid: string;
  },
): void {
  d.prepare(
    `INSERT INTO usage (session_id, session_key, agent_id, provider, model, request_id, input, output, total, cost, created_at)
     VALUES (?, ?, ?, 'p', ?, ?, ?, 0, ?, ?, ?)`,
  ).run(o.sid, o.key, o.agent, o.model, o.rid, o.total, o.total, o.cost, Date.parse(at));
}

describe("usage report", () => {
  it("labels the owner's days, oldest first, ending today in the zone", () => {
    const now = Date.parse("2026-03-10T03:00:00Z"); // still 9 March in New York
    expect(dayLabels(now, 3, "America/New_York")).toEqual(["2026-03-07", "2026-03-08", "2026-03-09"]);
    expect(dayLabels(now, 2, "UTC")).toEqual(["2026-03-09", "2026-03-10"]);
  });

  it("puts calls on the owner's day, splits them by agent, model and channel, and totals today", () => {
    const d = open();
    const now = Date.parse("2026-03-10T03:30:00Z"); // 9 March, 23:30 in New York
    // 03:50 UTC on 9 March is 8 March, 23:50 in New York (EDT since 8 March); 02:00 UTC on 10 March is 9 March there.
    row(d, "2026-03-09T03:50:00Z", {
      key: "agent:main:telegram:dm:1",
      agent: "main",
      model: "a",
      total: 100,
      cost: 0.5,
      rid: "r1",
      sid: "s1",
    });
    row(d, "2026-03-10T02:00:00Z", {
      key: "cron:daily",
      agent: "helper",
      model: "b",
      total: 40,
      cost: 0.25,
      rid: "r2",
      sid: "s2",
    });
    row(d, "2026-03-10T02:05:00Z", {
      key: "agent:main:gateway:x",
      agent: "main",
      model: "a",
      total: 10,
      cost: null,
      rid: "r3",
      sid: "s3",
    });
    // Older than the window: left out.
    row(d, "2026-01-01T12:00:00Z", {
      key: "cron:daily",
      agent: "helper",
      model: "b",
      total: 999,
      cost: 9,
      rid: "r0",
      sid: "s2",
    });
    const r = dailyUsage(d, now, 3, "America/New_York", PRICE);
    expect(r.days).toEqual(["2026-03-07", "2026-03-08", "2026-03-09"]);
    // The call without a price (r3, 10 input tokens) counts at the default price, as an estimate.
    expect(r.totals.cost.map((c) => Math.round(c * 100) / 100)).toEqual([0, 0.5, 0.26]);
    expect(r.totals.estimatedCalls).toEqual([0, 0, 1]);
    expect(r.totals.tokens).toEqual([0, 100, 50]);
    expect(r.today).toMatchObject({ tokens: 50, calls: 2, estimatedCalls: 1 });
    expect(r.today.cost).toBeCloseTo(0.26, 9);
    expect(r.defaultPrice).toEqual(PRICE);
    expect(r.byModel.map((s) => [s.key, s.cost])).toEqual([
      ["p/a", [0, 0.5, 0.01]],
      ["p/b", [0, 0, 0.25]],
    ]);
    expect(r.byChannel.map((s) => s.key)).toEqual(["telegram", "cron", "gateway"]);
    expect(r.byAgent.map((s) => s.key)).toEqual(["main", "helper"]);
  });

  it("lists the costliest sessions with their costliest request", () => {
    const d = open();
    row(d, "2026-03-09T10:00:00Z", {
      key: "k1",
      agent: "main",
      model: "a",
      total: 10,
      cost: 0.1,
      rid: "cheap",
      sid: "s1",
    });
    row(d, "2026-03-09T10:01:00Z", {
      key: "k1",
      agent: "main",
      model: "a",
      total: 10,
      cost: 0.3,
      rid: "dear",
      sid: "s1",
    });
    row(d, "2026-03-09T10:02:00Z", {
      key: "k2",
      agent: "main",
      model: "a",
      total: 500,
      cost: 0.2,
      rid: "r",
      sid: "s2",
    });
    const top = topSessions(d, Date.parse("2026-03-01T00:00:00Z"), 5, PRICE);
    expect(top.map((s) => [s.sessionId, s.topRequestId, s.calls])).toEqual([
      ["s1", "dear", 2],
      ["s2", "r", 1],
    ]);
    expect(top[0]!.cost).toBeCloseTo(0.4, 9);
    expect(topSessions(d, Date.parse("2026-03-01T00:00:00Z"), 1, PRICE)).toHaveLength(1);
  });
});
