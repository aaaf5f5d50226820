/**
 * The labels' cache (data-labels.ts, CACHE INVARIANT): a cached read must see exactly what a fresh
 * SELECT sees, whoever wrote. A real SQLite file; the second connection is what the CLI
 * (`familiar memory tainted clear`) or another process opens on the same file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { TaintSource } from "../../core/taint.js";
import { allMigrations } from "../../daemon/migrations.js";
import { openDatabase, type Db } from "../../store/db.js";
import { DataLabels } from "./data-labels.js";

const EVIL: TaintSource[] = [{ kind: "web_fetch", detail: "https://evil.example/page", at: 1 }];

let dir: string | undefined;
const open: { close(): void }[] = [];
afterEach(() => {
  for (const d of open.splice(0)) d.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The daemon's connection and a second one on the same file (another process's view). */
function connections(): { db: Db; other: Db; file: string } {
  dir = mkdtempSync(join(tmpdir(), "familiar-labels-"));
  const db = openDatabase(dir, { migrations: allMigrations });
  const file = join(dir, "familiar.db");
  const other = new Database(file, { fileMustExist: true });
  other.pragma("busy_timeout = 5000");
  open.push(other, db);
  return { db, other, file };
}

const keys = (l: DataLabels): string[] => l.list("file").map((x) => x.key);

describe("data labels, read through the cache", () => {
  it("a label cleared by another connection (the CLI) is gone from the next read", () => {
    const { db, other } = connections();
    const daemon = new DataLabels(db, () => 10);
    daemon.add("file", "notes/todo.md", "s-tainted", EVIL);
    expect(daemon.on("file", "notes/todo.md")).toHaveLength(1); // cached now
    expect(new DataLabels(other, () => 20).clear("file", "notes/todo.md")).toBe(1);
    expect(daemon.on("file", "notes/todo.md")).toEqual([]);
    expect(keys(daemon)).toEqual([]);
  });

  it("a label added by another connection is found at once: a stored label is never missed", () => {
    const { db, other } = connections();
    const daemon = new DataLabels(db, () => 10);
    expect(daemon.on("file", "HEARTBEAT.md")).toEqual([]); // an empty list, cached
    new DataLabels(other, () => 20).add("file", "./HEARTBEAT.md", "s-tainted", EVIL);
    const found = daemon.on("file", "HEARTBEAT.md");
    expect(found.map((l) => [l.key, l.sessionId])).toEqual([["HEARTBEAT.md", "s-tainted"]]);
    expect(found[0]?.sources).toEqual(EVIL);
  });

  it("this connection's own writes are seen by the next read, a folder's label covering its files", () => {
    const { db } = connections();
    const labels = new DataLabels(db, () => 10);
    expect(labels.on("file", "skills/x/SKILL.md")).toEqual([]);
    labels.add("file", "skills/x", "s1", EVIL);
    labels.add("job", "job-7", "s1", EVIL);
    expect(labels.on("file", "skills/x/SKILL.md").map((l) => l.key)).toEqual(["skills/x"]);
    expect(labels.on("job", "job-7").map((l) => l.sessionId)).toEqual(["s1"]);
    expect(labels.clear("file", "skills/x")).toBe(1);
    expect(labels.on("file", "skills/x/SKILL.md")).toEqual([]);
    expect(labels.on("job", "job-7")).toHaveLength(1);
  });

  it("a clear rolled back with its transaction leaves the label found (fails closed)", () => {
    const { db } = connections();
    const labels = new DataLabels(db, () => 10);
    labels.add("file", "MEMORY.md", "s1", EVIL);
    expect(keys(labels)).toEqual(["MEMORY.md"]);
    const clearThenFail = db.transaction(() => {
      labels.clear("file", "MEMORY.md");
      expect(keys(labels)).toEqual([]); // inside: what the transaction sees
      throw new Error("rolled back");
    });
    expect(() => clearThenFail()).toThrow("rolled back");
    expect(keys(labels)).toEqual(["MEMORY.md"]);
  });

  it("a label added in a transaction that rolls back is not reported afterwards", () => {
    const { db } = connections();
    const labels = new DataLabels(db, () => 10);
    const addThenFail = db.transaction(() => {
      labels.add("file", "notes/a.md", "s1", EVIL);
      expect(keys(labels)).toEqual(["notes/a.md"]);
      throw new Error("rolled back");
    });
    expect(() => addThenFail()).toThrow("rolled back");
    expect(keys(labels)).toEqual([]);
  });

  it("lists oldest first and keeps the same list object until the labels change", () => {
    const { db, other } = connections();
    const labels = new DataLabels(db, () => 10);
    labels.add("file", "b.md", "s1", EVIL);
    labels.add("file", "a.md", "s1", EVIL);
    const first = labels.list("file");
    expect(first.map((l) => l.key)).toEqual(["b.md", "a.md"]);
    expect(labels.list("file")).toBe(first);
    other.prepare("UPDATE data_labels SET cleared_at = 5 WHERE key = 'b.md'").run();
    const next = labels.list("file");
    expect(next).not.toBe(first);
    expect(next.map((l) => l.key)).toEqual(["a.md"]);
  });
});
