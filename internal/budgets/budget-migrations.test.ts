/**
 * The usage table keeps one time index: `usage_payer_time` (created_at first) serves every "since"
 * query, so the older `usage_time` is dropped (it cost a page written per model call).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { allMigrations } from "../daemon/migrations.js";
import { openDatabase, type Db } from "../store/db.js";

let dir: string | undefined;
let db: Db | undefined;
afterEach(() => {
  db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const plan = (d: Db, sql: string): string =>
  d
    .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
    .all(
      ...sql
        .split("?")
        .slice(1)
        .map(() => 0),
    )
    .map((r) => r.detail)
    .join("; ");

describe("budget migrations", () => {
  it("drop usage_time and every time-range query on usage still searches an index", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-budget-mig-"));
    db = openDatabase(dir, { migrations: allMigrations });
    const indexes = db
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage'",
      )
      .all()
      .map((r) => r.name);
    expect(indexes).not.toContain("usage_time");
    expect(indexes).toContain("usage_payer_time");
    // What the budget guard (spend.ts) and the usage reports (usage-tracker.ts) ask.
    for (const sql of [
      "SELECT SUM(total) FROM usage WHERE created_at >= ?",
      "SELECT SUM(total) FROM usage WHERE created_at >= ? AND payer_agent = ?",
      "SELECT SUM(total) FROM usage WHERE created_at >= ? AND channel = ?",
      "SELECT provider, model, SUM(total) FROM usage WHERE created_at >= ? GROUP BY provider, model",
    ])
      expect(plan(db, sql).split("; ")[0]).toMatch(
        /^SEARCH usage USING (COVERING )?INDEX usage_payer_time \(created_at>\?\)/,
      );
  });
});
