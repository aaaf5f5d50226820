/**
 * A real SQLite file in a temp dir with every migration the daemon applies, for the store contracts:
 * `restart()` closes the connection and opens the same file again (what a daemon restart does), and
 * `second()` opens another connection to it (what the CLI does while the daemon runs).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allMigrations } from "../../internal/daemon/migrations.js";
import { openDatabase, type Db } from "../../internal/store/db.js";

export interface SqliteFile {
  /** The current connection; replaced by `restart()`. */
  db: Db;
  dir: string;
  restart(): Db;
  /** Another connection to the same file, closed by `close()`. */
  second(): Db;
  /** Closes every connection and removes the directory. */
  close(): void;
}

/** Opens a fresh database file in a new temp dir. */
export function openSqliteFile(): SqliteFile {
  const dir = mkdtempSync(join(tmpdir(), "familiar-contract-"));
  const open = (): Db => openDatabase(dir, { migrations: allMigrations });
  const others: Db[] = [];
  const f: SqliteFile = {
    db: open(),
    dir,
    restart() {
      f.db.close();
      f.db = open();
      return f.db;
    },
    second() {
      const db = open();
      others.push(db);
      return db;
    },
    close() {
      for (const db of [f.db, ...others]) if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return f;
}
