/**
 * An upgrade never loses data: pending migrations on an existing database are preceded by a copy of
 * it, and a migration that fails leaves the database as it was, with one clear line.
 */
import Database from "better-sqlite3";
import { mkdtempSync, readdirSync } from "node:fs";
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

describe("migrations at start", () => {
  it("copies the database aside before upgrading it, and only when there is something to upgrade", () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-mig-"));
    const backups = join(dir, "backups");
    const db = openDatabase(dir, { migrations: v1, backupBeforeMigrating: backups });
    db.prepare("INSERT INTO notes (body) VALUES (?)").run("keep me");
    db.close();
    // Fresh database and no pending migration: no copy.
    openDatabase(dir, { migrations: v1, backupBeforeMigrating: backups }).close();
    expect(() => readdirSync(backups)).toThrow();
    const v2: MigrationSets = {
      notes: [
        ...v1.notes!,
        { version: 2, description: "tags", sql: "ALTER TABLE notes ADD COLUMN tag TEXT;" },
      ],
    };
    openDatabase(dir, { migrations: v2, backupBeforeMigrating: backups }).close();
    const copies = readdirSync(backups);
    expect(copies).toEqual([expect.stringMatching(/^pre-migration-.*\.db$/)]);
    const old = new Database(join(backups, copies[0]!), { readonly: true });
    expect(old.prepare("SELECT version FROM schema_version WHERE namespace = 'notes'").get()).toEqual({
      version: 1,
    });
    expect(old.prepare("SELECT body FROM notes").all()).toEqual([{ body: "keep me" }]);
    old.close();
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
      openDatabase(dir, { migrations: broken, backupBeforeMigrating: join(dir, "backups") });
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
