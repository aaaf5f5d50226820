import Database from "better-sqlite3";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyMigrations, classifyStoreError, openDatabase, StoreError, type Db } from "./db.js";
import type { Migration, MigrationSets } from "./migrations.js";
import { allMigrations } from "../daemon/migrations.js";

const dirs: string[] = [];
const open: Db[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "familiar-db-"));
  dirs.push(d);
  return d;
}

function track(db: Db): Db {
  open.push(db);
  return db;
}

afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const v1: Migration = {
  version: 1,
  description: "notes",
  sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
};
const v2: Migration = {
  version: 2,
  description: "notes.tag",
  sql: "ALTER TABLE notes ADD COLUMN tag TEXT NOT NULL DEFAULT 'none'",
};

function versions(db: Db): Record<string, number> {
  const rows = db.prepare<[], { namespace: string; version: number }>(
    "SELECT namespace, version FROM schema_version ORDER BY namespace",
  );
  return Object.fromEntries(rows.all().map((r) => [r.namespace, r.version]));
}

function columns(db: Db, table: string): string[] {
  return db
    .prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
    .all()
    .map((r) => r.name);
}

describe("openDatabase", () => {
  it("creates <data_dir>/familiar.db in WAL mode with synchronous=NORMAL and foreign keys", () => {
    const dir = join(tempDir(), "nested", "data");
    const db = track(openDatabase(dir, { migrations: { test: [v1] } }));
    expect(db.name).toBe(join(dir, "familiar.db"));
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("synchronous", { simple: true })).toBe(1); // NORMAL
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(versions(db)).toEqual({ test: 1 });
  });

  it("applies the real registry of every module on a fresh db, and nothing on reopen", () => {
    const dir = tempDir();
    const db = track(openDatabase(dir, { migrations: allMigrations }));
    const expected = Object.fromEntries(
      Object.entries(allMigrations)
        .filter(([, list]) => list.length > 0)
        .map(([ns, list]) => [ns, list[list.length - 1]!.version]),
    );
    expect(versions(db)).toEqual(Object.fromEntries(Object.entries(expected).sort()));
    db.close();
    const again = track(openDatabase(dir, { migrations: allMigrations }));
    expect(applyMigrations(again, allMigrations)).toEqual([]);
    expect(again.pragma("integrity_check", { simple: true })).toBe("ok");
  });

  it("migrates an existing db: v2 is applied once and the data is kept", () => {
    const dir = tempDir();
    const first = track(openDatabase(dir, { migrations: { notes: [v1] } }));
    first.prepare("INSERT INTO notes (body) VALUES (?)").run("remember the milk");
    first.close();

    const second = track(openDatabase(dir, { migrations: { notes: [v1, v2] } }));
    expect(versions(second)).toEqual({ notes: 2 });
    expect(columns(second, "notes")).toEqual(["id", "body", "tag"]);
    expect(second.prepare("SELECT body, tag FROM notes").all()).toEqual([
      { body: "remember the milk", tag: "none" },
    ]);
    // Reopening applies nothing more (an ALTER run twice would fail with "duplicate column").
    second.close();
    const third = track(openDatabase(dir, { migrations: { notes: [v1, v2] } }));
    expect(applyMigrations(third, { notes: [v1, v2] })).toEqual([]);
    expect(third.prepare("SELECT count(*) AS n FROM notes").get()).toEqual({ n: 1 });
  });

  it("returns the ids it applied, per namespace", () => {
    const db = track(new Database(":memory:"));
    const t = (n: number, table: string): Migration => ({
      version: n,
      description: `${table} v${n}`,
      sql: n === 1 ? `CREATE TABLE ${table} (x INTEGER)` : `ALTER TABLE ${table} ADD COLUMN c${n} TEXT`,
    });
    expect(applyMigrations(db, { a: [t(1, "a")], b: [t(1, "b"), t(2, "b")] })).toEqual(["a:1", "b:1", "b:2"]);
    expect(applyMigrations(db, { a: [t(1, "a"), t(2, "a")], b: [t(1, "b"), t(2, "b")] })).toEqual(["a:2"]);
  });

  it("rolls back the whole batch when one migration fails, and names it", () => {
    const dir = tempDir();
    track(openDatabase(dir, { migrations: { notes: [v1] } })).close();
    const broken: Migration = { version: 1, description: "broken", sql: "CREATE TABLE oops (" };
    const sets: MigrationSets = {
      notes: [v1, v2],
      extra: [{ version: 1, description: "extra table", sql: "CREATE TABLE extra (x INTEGER)" }],
      bad: [broken],
    };
    let caught: unknown;
    try {
      openDatabase(dir, { migrations: sets });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(StoreError);
    expect((caught as StoreError).code).toBe("STORE_MIGRATION");
    expect((caught as StoreError).message).toMatch(/^migration bad:1 \(broken\) failed: /);

    // Nothing of the batch stuck: not notes:2, not extra:1, and the db is still usable at v1.
    const db = track(openDatabase(dir, { migrations: { notes: [v1] } }));
    expect(versions(db)).toEqual({ notes: 1 });
    expect(columns(db, "notes")).toEqual(["id", "body"]);
    expect(columns(db, "extra")).toEqual([]);
  });

  it("rejects a namespace whose migrations are not strictly increasing", () => {
    const db = track(new Database(":memory:"));
    expect(() => applyMigrations(db, { x: [v2, v1] })).toThrow(
      /migrations of x are not strictly increasing at 1/,
    );
  });

  it("reports a data_dir that cannot be created as STORE_READONLY", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "file"), "not a dir");
    expect(() => openDatabase(join(dir, "file", "data"), { migrations: {} })).toThrow(
      expect.objectContaining({
        code: "STORE_READONLY",
        message: expect.stringMatching(/cannot create data_dir/),
      }),
    );
  });
});

describe("classifyStoreError (real SQLite failures)", () => {
  it("STORE_FULL when the database cannot grow", () => {
    const db = track(openDatabase(tempDir(), { migrations: { notes: [v1] } }));
    const pages = db.pragma("page_count", { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 2}`);
    const insert = db.prepare("INSERT INTO notes (body) VALUES (?)");
    let caught: unknown;
    try {
      for (let i = 0; i < 100; i++) insert.run("x".repeat(4096));
    } catch (err) {
      caught = err;
    }
    const e = classifyStoreError(caught);
    expect(e).toBeInstanceOf(StoreError);
    expect(e.code).toBe("STORE_FULL");
    expect(e.message).toMatch(/^the disk holding the database is full/);
    expect(e.cause).toBe(caught);
  });

  it("STORE_READONLY when writing through a read-only handle", () => {
    const dir = tempDir();
    track(openDatabase(dir, { migrations: { notes: [v1] } })).close();
    const ro = track(new Database(join(dir, "familiar.db"), { readonly: true }));
    let caught: unknown;
    try {
      ro.prepare("INSERT INTO notes (body) VALUES ('x')").run();
    } catch (err) {
      caught = err;
    }
    expect(classifyStoreError(caught).code).toBe("STORE_READONLY");
  });

  it("STORE_BUSY when another connection holds the write lock", () => {
    const dir = tempDir();
    const a = track(openDatabase(dir, { migrations: { notes: [v1] } }));
    const b = track(new Database(join(dir, "familiar.db")));
    b.pragma("busy_timeout = 0");
    a.exec("BEGIN IMMEDIATE");
    let caught: unknown;
    try {
      b.prepare("INSERT INTO notes (body) VALUES ('x')").run();
    } catch (err) {
      caught = err;
    }
    a.exec("ROLLBACK");
    const e = classifyStoreError(caught);
    expect(e.code).toBe("STORE_BUSY");
    expect(e.message).toMatch(/^the database is busy/);
  });

  it("STORE_ERROR for anything else, and passes StoreErrors through", () => {
    const db = track(new Database(":memory:"));
    let caught: unknown;
    try {
      db.prepare("SELECT * FROM nowhere").all();
    } catch (err) {
      caught = err;
    }
    expect(classifyStoreError(caught)).toMatchObject({
      code: "STORE_ERROR",
      message: "no such table: nowhere",
    });
    const already = new StoreError("STORE_FULL", "full");
    expect(classifyStoreError(already)).toBe(already);
  });
});
