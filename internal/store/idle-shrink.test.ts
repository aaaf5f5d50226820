import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, WAL_AUTOCHECKPOINT_PAGES, type Db } from "./db.js";
import { startIdleShrink } from "./idle-shrink.js";

let dir: string;
let db: Db;
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function rowCount(d: Db): number {
  return (d.prepare("SELECT COUNT(*) AS n FROM big").get() as { n: number }).n;
}

describe("idle shrink", () => {
  it("shrinks once after writes stop, not while writes go on, and not when nothing was written", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-shrink-"));
    db = openDatabase(dir, { migrations: {} });
    db.exec("CREATE TABLE big (x TEXT)");
    const s = startIdleShrink(db, 0);
    expect(s.check()).toBe(false); // nothing written yet
    const insert = db.prepare("INSERT INTO big (x) VALUES (?)");
    insert.run("a".repeat(1000));
    expect(s.check()).toBe(false); // writes since the last check: busy
    insert.run("b".repeat(1000));
    expect(s.check()).toBe(false);
    expect(s.check()).toBe(true); // quiet since the last check: shrink
    expect(s.check()).toBe(false); // once per quiet spell
    expect(rowCount(db)).toBe(2); // the data is all still there
    insert.run("c");
    expect(s.check()).toBe(false);
    expect(s.check()).toBe(true);
    s.stop();
  });

  it("leaves the WAL to the quiet-time checkpoint below the threshold, which then copies it into the database", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-shrink-"));
    db = openDatabase(dir, { migrations: {} });
    db.exec("CREATE TABLE big (x TEXT)");
    const s = startIdleShrink(db, 0);
    const file = join(dir, "familiar.db");
    const before = statSync(file).size;
    // ~1,400 pages in 700 commits: past SQLite's default threshold (1,000), under ours.
    const insert = db.prepare("INSERT INTO big (x) VALUES (?)");
    for (let i = 0; i < 700; i++) insert.run(`${i}`.padEnd(3000, "x"));
    const frames = statSync(`${file}-wal`).size / 4120;
    expect(frames).toBeGreaterThan(1000);
    expect(frames).toBeLessThan(WAL_AUTOCHECKPOINT_PAGES);
    // No commit checkpointed: the database file has not grown, the rows live in the WAL.
    expect(statSync(file).size).toBe(before);
    expect(s.check()).toBe(false); // writes since the last check: busy
    expect(s.check()).toBe(true); // quiet: checkpoint and shrink
    expect(statSync(file).size).toBeGreaterThan(before + 700 * 3000);
    expect(rowCount(db)).toBe(700);
    s.stop();
  });
});
