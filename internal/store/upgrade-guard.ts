/**
 * Upgrades cannot brick an install: before migrating a database that already holds a schema, the
 * store copies it beside itself (`familiar.db.pre-<level>`, a consistent `VACUUM INTO` copy) and
 * records the copy in the database (`store_upgrades`); a build that finds a namespace at a version
 * newer than it knows refuses to open the database, in one line naming the copy taken before the
 * upgrade and how to go back to it. Going back to a build older than this guard is still possible by
 * hand with that copy, but such a build would not refuse by itself.
 *
 * The schema level is the sum of the known namespaces' versions: migrations are only ever added, so
 * it grows with every upgrade and names a schema state in one number.
 */
import { existsSync } from "node:fs";
import { basename } from "node:path";
import type Database from "better-sqlite3";
import { StoreError } from "./store-error.js";

type Db = Database.Database;
import type { MigrationSets } from "./migrations.js";

/** Versions per namespace as a database holds them (`schema_version`). */
export type SchemaVersions = Record<string, number>;

/** The versions stored in `db`, or undefined when it has no schema yet (a fresh database). */
export function storedVersions(db: Db): SchemaVersions | undefined {
  const has = db
    .prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'schema_version'")
    .get()!.n;
  if (!has) return undefined;
  const rows = db
    .prepare<[], { namespace: string; version: number }>("SELECT namespace, version FROM schema_version")
    .all();
  return Object.fromEntries(rows.map((r) => [r.namespace, r.version]));
}

/** The highest version this build knows per namespace. */
export function knownVersions(sets: MigrationSets): SchemaVersions {
  return Object.fromEntries(
    Object.entries(sets).map(([ns, list]) => [ns, list.reduce((m, x) => Math.max(m, x.version), 0)]),
  );
}

/** Sum of the versions of the namespaces `sets` knows: one number for a schema state. */
export function schemaLevel(versions: SchemaVersions, sets: MigrationSets): number {
  return Object.keys(sets).reduce((sum, ns) => sum + (versions[ns] ?? 0), 0);
}

/** Namespaces stored at a version newer than this build's migrations reach, as `ns:stored>known`. */
export function newerThanKnown(stored: SchemaVersions, sets: MigrationSets): string[] {
  const known = knownVersions(sets);
  return Object.entries(known)
    .filter(([ns, max]) => (stored[ns] ?? 0) > max)
    .map(([ns, max]) => `${ns}:${stored[ns]} (this build knows ${ns}:${max})`);
}

const UPGRADES_TABLE = `CREATE TABLE IF NOT EXISTS store_upgrades (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  copy TEXT NOT NULL,
  from_versions TEXT NOT NULL,
  at INTEGER NOT NULL
)`;

/**
 * Refuses a database written by a newer build: throws STORE_NEWER naming the namespaces, the copy
 * taken before the upgrade that this build can open (the newest whose versions it all knows), and how
 * to put it back. Does nothing when every stored namespace is within what `sets` knows.
 */
export function refuseNewerSchema(db: Db, file: string, sets: MigrationSets): void {
  const stored = storedVersions(db);
  if (!stored) return;
  const newer = newerThanKnown(stored, sets);
  if (newer.length === 0) return;
  const copy = usableCopy(db, sets);
  const back = copy
    ? `or go back to the copy taken before that upgrade: stop Familiar, move ${file} (and ${basename(file)}-wal, ${basename(file)}-shm if present) aside, then rename ${copy} to ${file}; what changed since that upgrade is lost`
    : `or restore a backup taken before that upgrade (familiar restore DIR); no copy of the database from before it is recorded`;
  throw new StoreError(
    "STORE_NEWER",
    `${file} was written by a newer Familiar (${newer.join(", ")}), so this build will not open it: run the newer build, ${back}`,
  );
}

/** The newest recorded pre-upgrade copy still on disk whose versions this build knows, if any. */
function usableCopy(db: Db, sets: MigrationSets): string | undefined {
  const has = db
    .prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'store_upgrades'")
    .get()!.n;
  if (!has) return undefined;
  const rows = db
    .prepare<[], { copy: string; from_versions: string }>(
      "SELECT copy, from_versions FROM store_upgrades ORDER BY id DESC",
    )
    .all();
  for (const r of rows) {
    let from: SchemaVersions;
    try {
      from = JSON.parse(r.from_versions) as SchemaVersions;
    } catch {
      continue;
    }
    if (newerThanKnown(from, sets).length === 0 && existsSync(r.copy)) return r.copy;
  }
  return undefined;
}

/**
 * Copies the database beside itself when migrations are pending and it already holds a schema (a
 * fresh database has nothing to lose), and records the copy in the database so a newer database can
 * name it to an older build. Returns the copy's path, or undefined when none was needed.
 */
export function copyBeforeMigrating(db: Db, file: string, sets: MigrationSets): string | undefined {
  const stored = storedVersions(db);
  if (!stored) return undefined;
  const pending = Object.entries(sets).some(([ns, list]) => list.some((m) => m.version > (stored[ns] ?? 0)));
  if (!pending) return undefined;
  const base = `${file}.pre-${schemaLevel(stored, sets)}`;
  let to = base;
  for (let n = 2; existsSync(to); n++) to = `${base}.${n}`;
  try {
    db.prepare("VACUUM INTO ?").run(to);
  } catch (err) {
    throw new StoreError(
      "STORE_MIGRATION",
      `could not copy the database to ${to} before upgrading it, so it was not upgraded: ${(err as Error).message}`,
      { cause: err },
    );
  }
  db.exec(UPGRADES_TABLE);
  db.prepare("INSERT INTO store_upgrades (copy, from_versions, at) VALUES (?, ?, ?)").run(
    to,
    JSON.stringify(stored),
    Date.now(),
  );
  return to;
}
