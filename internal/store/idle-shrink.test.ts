import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type Db } from "./db.js";
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
});
