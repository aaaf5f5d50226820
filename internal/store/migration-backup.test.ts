/**
 * An upgrade never loses data: pending migrations on an existing database are preceded by a copy of
 * it beside itself, a migration that fails leaves the database as it was, with one clear line, and a
 * build refuses a database a newer build wrote, naming the copy to go back to.
 */
import Database from "better-sqlite3";
import { mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase, StoreError } from "./db.js";
import type { MigrationSets } from "./migrations.js";

const v1: MigrationSets = {
  notes: [
    { version: 1, description: "notes", sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);" },
  ],
};
const v2: MigrationSets = {
  notes: [...v1.notes!, { version: 2, description: "tags", sql: "ALTER TABLE notes ADD COLUMN tag TEXT;" }],
};

describe("migrations at start", () => {
  it("copies the database beside itself before upgrading it, and only when there is something to upgrade", () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-mig-"));
    const db = openDatabase(dir, { migrations: v1 });
    db.prepare("INSERT INTO notes (body) VALUES (?)").run("keep me");
    db.close();
    // Fresh database and no pending migration: no copy.
    openDatabase(dir, { migrations: v1 }).close();
    expect(readdirSync(dir).filter((f) => f.includes(".pre-"))).toEqual([]);
    openDatabase(dir, { migrations: v2 }).close();
    // Level 1 (notes:1) before the upgrade.
    expect(readdirSync(dir).filter((f) => f.includes(".pre-"))).toEqual(["familiar.db.pre-1"]);
    const old = new Database(join(dir, "familiar.db.pre-1"), { readonly: true });
    expect(old.prepare("SELECT version FROM schema_version WHERE namespace = 'notes'").get()).toEqual({
      version: 1,
    });
    expect(old.prepare("SELECT body FROM notes").all()).toEqual([{ body: "keep me" }]);
    old.close();
  });

  it("a build refuses a database a newer build wrote, in one line naming the copy, which opens again", () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-mig-"));
    const file = join(dir, "familiar.db");
    const db = openDatabase(dir, { migrations: v1 });
    db.prepare("INSERT INTO notes (body) VALUES (?)").run("before");
    db.close();
    const newer = openDatabase(dir, { migrations: v2 });
    newer.prepare("INSERT INTO notes (body, tag) VALUES (?, ?)").run("after", "x");
    newer.close();
    let err: unknown;
    try {
      openDatabase(dir, { migrations: v1 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("STORE_NEWER");
    const msg = (err as Error).message;
    expect(msg).not.toContain("\n");
    expect(msg).toBe(
      `${file} was written by a newer Familiar (notes:2 (this build knows notes:1)), so this build will not open it: run the newer build, or go back to the copy taken before that upgrade: stop Familiar, move ${file} (and familiar.db-wal, familiar.db-shm if present) aside, then rename ${file}.pre-1 to ${file}; what changed since that upgrade is lost`,
    );
    // The refused database is untouched: the newer build still opens it with its row.
    const again = openDatabase(dir, { migrations: v2 });
    expect(again.prepare("SELECT body FROM notes ORDER BY id").all()).toEqual([
      { body: "before" },
      { body: "after" },
    ]);
    again.close();
    // Following the line: the copy takes the database's place and the older build opens it.
    renameSync(file, `${file}.newer`);
    for (const side of ["-wal", "-shm"]) rmSync(`${file}${side}`, { force: true });
    renameSync(`${file}.pre-1`, file);
    const back = openDatabase(dir, { migrations: v1 });
    expect(back.prepare("SELECT body FROM notes").all()).toEqual([{ body: "before" }]);
    back.close();
  });

  it("a newer database with no recorded copy points at a backup instead", () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-mig-"));
    openDatabase(dir, { migrations: v2 }).close();
    expect(() => openDatabase(dir, { migrations: v1 })).toThrow(
      /newer Familiar \(notes:2 \(this build knows notes:1\)\).*restore a backup taken before that upgrade \(familiar restore DIR\)/,
    );
  });

  it("a failed migration leaves the old database untouched, with one clear line", () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-mig-"));
    const db = openDatabase(dir, { migrations: v1 });
    db.prepare("INSERT INTO notes (body) VALUES (?)").run("keep me");
    db.close();
    const broken: MigrationSets = {
      notes: [
        ...v1.notes!,
        { version: 2, description: "a column", sql: "ALTER TABLE notes ADD COLUMN tag TEXT;" },
        { version: 3, description: "a typo", sql: "ALTER TABLE nope ADD COLUMN x TEXT;" },
      ],
    };
    let err: unknown;
    try {
      openDatabase(dir, { migrations: broken });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreError);
    const msg = (err as Error).message;
    expect(msg).not.toContain("\n");
    expect(msg).toBe(
      "migration notes:3 (a typo) failed: no such table: nope; the database was left exactly as it was (nothing of the upgrade applied)",
    );
    const after = new Database(join(dir, "familiar.db"), { readonly: true });
    expect(after.prepare("SELECT version FROM schema_version WHERE namespace = 'notes'").get()).toEqual({
      version: 1,
    });
    expect(after.prepare("SELECT * FROM notes").all()).toEqual([{ id: 1, body: "keep me" }]);
    after.close();
  });
});
