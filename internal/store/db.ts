/**
 * SQLite store: `<data_dir>/familiar.db`, WAL, synchronous=NORMAL (durable across a kill -9 of the
 * process; a power cut may lose the last transactions but never corrupts). All pending migrations of
 * every namespace are applied at open in ONE transaction, so a failed migration leaves the old schema.
 */
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { MigrationSets } from "./migrations.js";
import { StoreError } from "./store-error.js";
import { copyBeforeMigrating, refuseNewerSchema } from "./upgrade-guard.js";

export { StoreError } from "./store-error.js";

export type Db = Database.Database;

/** WAL pages (4 KB each, ~16 MB) after which a commit checkpoints the WAL into the database. */
export const WAL_AUTOCHECKPOINT_PAGES = 4000;

/** Maps a raw better-sqlite3 error to a {@link StoreError} with a clear code. */
export function classifyStoreError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const code = (err as { code?: string }).code ?? "";
  const msg = (err as Error).message ?? String(err);
  if (code === "SQLITE_FULL")
    return new StoreError("STORE_FULL", `the disk holding the database is full: ${msg}`, { cause: err });
  if (code.startsWith("SQLITE_READONLY") || code === "SQLITE_CANTOPEN" || code.startsWith("SQLITE_IOERR"))
    return new StoreError("STORE_READONLY", `the database cannot be written: ${msg}`, { cause: err });
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
    return new StoreError("STORE_BUSY", `the database is busy: ${msg}`, { cause: err });
  return new StoreError("STORE_ERROR", msg, { cause: err });
}

/**
 * For a failed write during a turn: the store error and what to tell the user, or undefined when `err`
 * is not a SQLite failure. The text names the cause and what to do, since the owner must act (free disk
 * space, fix permissions); a bare "SqliteError" would tell them nothing.
 */
export function storeFailure(err: unknown): { error: StoreError; userText: string } | undefined {
  const code = (err as { code?: unknown })?.code;
  if (!(err instanceof StoreError) && !(typeof code === "string" && code.startsWith("SQLITE_")))
    return undefined;
  const error = classifyStoreError(err);
  const why =
    error.code === "STORE_FULL"
      ? "the disk holding my database is full"
      : error.code === "STORE_READONLY"
        ? "my database cannot be written (a read-only disk or wrong permissions)"
        : error.code === "STORE_BUSY"
          ? "my database is busy"
          : `my database failed (${error.message})`;
  return {
    error,
    userText: `I could not save this conversation because ${why}, so I did not answer. Please fix that and send your message again.`,
  };
}

export interface OpenStoreOptions {
  /** Path of the db file, or `:memory:`. Defaults to `<dataDir>/familiar.db`. */
  file?: string;
  migrations: MigrationSets;
}

/** Opens the database, configures pragmas and applies pending migrations. */
export function openDatabase(dataDir: string, opts: OpenStoreOptions): Db {
  const file = opts.file ?? join(dataDir, "familiar.db");
  if (file !== ":memory:") {
    try {
      mkdirSync(dataDir, { recursive: true });
    } catch (err) {
      throw new StoreError("STORE_READONLY", `cannot create data_dir ${dataDir}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  let db: Db | undefined;
  try {
    db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 5000");
    // Page cache: SQLite's own default of 2 MB, not better-sqlite3's 16 MB. Under load the cache
    // fills to its bound and stays resident; the hot pages of a turn (recent messages, the heads,
    // the usage and trace tails) fit in 2 MB, and the rest is one read from the OS page cache.
    db.pragma("cache_size = -2000");
    // After a checkpoint a WAL that grew large (a long reader held it) is cut back to 32 MB on disk.
    db.pragma("journal_size_limit = 33554432");
    // The automatic checkpoint runs inside the commit that crosses the threshold, so one turn pays for
    // copying the WAL back (and its two fsyncs). At SQLite's default of 1,000 pages that was every ~55
    // turns (a turn writes ~18 pages); every 4,000 it is rare enough to stay out of a turn's p99, and
    // hot pages (index leaves, the session rows) are copied once per checkpoint rather than four times.
    // The quiet-time checkpoint (idle-shrink.ts) keeps the WAL short when the daemon rests.
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  } catch (err) {
    db?.close();
    throw classifyStoreError(err);
  }
  try {
    // A database a newer build wrote is refused before anything touches it; an upgrade first copies
    // the database beside itself (upgrade-guard.ts), so it can always be gone back to.
    refuseNewerSchema(db, file, opts.migrations);
    if (file !== ":memory:") copyBeforeMigrating(db, file, opts.migrations);
    applyMigrations(db, opts.migrations);
  } catch (err) {
    db.close();
    if (err instanceof StoreError && err.code === "STORE_MIGRATION")
      throw new StoreError(
        "STORE_MIGRATION",
        `${err.message}; the database was left exactly as it was (nothing of the upgrade applied)`,
        { cause: err },
      );
    throw err;
  }
  return db;
}

/** Applies every pending migration in one transaction. Returns the ids applied. */
export function applyMigrations(db: Db, sets: MigrationSets): string[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_version (
    namespace TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    applied_at INTEGER NOT NULL
  )`);
  const getVersion = db.prepare<[string], { version: number }>(
    "SELECT version FROM schema_version WHERE namespace = ?",
  );
  const setVersion = db.prepare(
    "INSERT INTO schema_version (namespace, version, applied_at) VALUES (?, ?, ?) ON CONFLICT(namespace) DO UPDATE SET version = excluded.version, applied_at = excluded.applied_at",
  );
  // Validate every list before touching the schema, so a numbering mistake names itself.
  for (const [ns, list] of Object.entries(sets)) {
    let prev = 0;
    for (const m of list) {
      if (!Number.isInteger(m.version) || m.version <= prev)
        throw new StoreError(
          "STORE_MIGRATION",
          `migrations of ${ns} are not strictly increasing at ${m.version}`,
        );
      prev = m.version;
    }
  }
  const applied: string[] = [];
  const run = db.transaction(() => {
    for (const [ns, list] of Object.entries(sets)) {
      const current = getVersion.get(ns)?.version ?? 0;
      for (const m of list) {
        if (m.version <= current) continue;
        try {
          db.exec(m.sql);
        } catch (err) {
          throw new StoreError(
            "STORE_MIGRATION",
            `migration ${ns}:${m.version} (${m.description}) failed: ${(err as Error).message}`,
            { cause: err },
          );
        }
        setVersion.run(ns, m.version, Date.now());
        applied.push(`${ns}:${m.version}`);
      }
    }
  });
  run();
  return applied;
}
