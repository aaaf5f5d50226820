/**
 * Backups you can restore: a consistent snapshot of an instance, taken while the daemon runs.
 *
 * A snapshot is a directory `familiar-backup-<time>/` holding:
 * - `familiar.db`: SQLite's online backup of the live database (a consistent copy at one instant,
 *   taken through its own read connection: the daemon keeps writing meanwhile). Sessions, messages,
 *   memory with its vectors, cron jobs and runs, pairing, usage: everything the daemon stores;
 * - `workspace/`: the workspace's regular files and directories. The workspace is written by the
 *   agent's sandbox, so it is untrusted: symlinks are never followed (they are listed as skipped),
 *   files are opened with O_NOFOLLOW and checked to be regular files after opening;
 * - `config.yaml`: the config file byte for byte, so secrets stay the `${VAR}` references it has;
 * - `manifest.json` (written last): format, time, schema versions, row counts, and every file with its
 *   size and sha256. A directory without a manifest is an unfinished backup and never restored;
 * - `manifest.sig`: HMAC-SHA256 of the manifest with this installation's key (backup-key.ts), which
 *   stays in the data dir: it tells a restore here that the backup is its own.
 *
 * The snapshot is assembled in `<name>.partial` and renamed into place when complete. The gateway
 * token, the instance lock and runtime files are not part of it (a restored instance makes its own).
 */
import Database from "better-sqlite3";
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join, relative, sep } from "node:path";
import { BackupError } from "./backup-error.js";
import { MANIFEST_SIG, ensureBackupKey, signManifest } from "./backup-key.js";

export const BACKUP_FORMAT = 1;
export const MANIFEST = "manifest.json";

/** One file of a snapshot. */
export interface ManifestFile {
  /** Path inside the snapshot, `/`-separated. */
  path: string;
  bytes: number;
  sha256: string;
}

export interface BackupManifest {
  format: number;
  createdAt: string;
  /** `schema_version` rows of the database at the snapshot. */
  schema: Record<string, number>;
  /** Row counts of the tables a restore must bring back. */
  counts: Record<string, number>;
  files: ManifestFile[];
  /** Workspace entries not copied (symlinks, sockets, devices), with why. */
  skipped: { path: string; why: string }[];
}

export { BackupError } from "./backup-error.js";

/** Tables counted in the manifest (and compared by the restore test). */
export const COUNTED_TABLES = [
  "sessions",
  "messages",
  "memory_files",
  "memory_chunks",
  "cron_jobs",
  "cron_runs",
  "pairing_allowed",
  "usage",
] as const;

export interface BackupSource {
  dbFile: string;
  workspace: string;
  configFile: string | undefined;
  /**
   * The data dir whose `backup.key` signs the snapshot (made there when missing): a restore on this
   * installation then knows the backup for its own (backup-key.ts). Unsigned when absent.
   */
  keyDir?: string;
}

/** Takes a snapshot into a new directory under `toDir`; returns its path and manifest. */
export async function takeBackup(
  src: BackupSource,
  toDir: string,
  now = new Date(),
): Promise<{ dir: string; manifest: BackupManifest }> {
  if (!existsSync(src.dbFile)) throw new BackupError("BACKUP_SOURCE", `no database at ${src.dbFile}`);
  mkdirSync(toDir, { recursive: true });
  const name = `familiar-backup-${now.toISOString().replace(/[:.]/g, "-")}`;
  const final = join(toDir, name);
  const work = `${final}.partial`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const db = new Database(src.dbFile, { readonly: true, fileMustExist: true });
    try {
      db.pragma("busy_timeout = 5000");
      await db.backup(join(work, "familiar.db"));
    } finally {
      db.close();
    }
    const { schema, counts } = describeDb(join(work, "familiar.db"));
    const skipped: BackupManifest["skipped"] = [];
    if (existsSync(src.workspace))
      copyTreeNoFollow(src.workspace, join(work, "workspace"), skipped, src.workspace);
    if (src.configFile && existsSync(src.configFile)) copyFileSync(src.configFile, join(work, "config.yaml"));
    const files = listFiles(work).map((p) => fileEntry(work, p));
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      createdAt: now.toISOString(),
      schema,
      counts,
      files,
      skipped,
    };
    const manifestBytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(join(work, MANIFEST), manifestBytes);
    if (src.keyDir)
      writeFileSync(join(work, MANIFEST_SIG), signManifest(ensureBackupKey(src.keyDir), manifestBytes), {
        mode: 0o600,
      });
    renameSync(work, final);
    return { dir: final, manifest };
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw err;
  }
}

/** Schema versions and row counts of a database file (read only). */
export function describeDb(file: string): { schema: Record<string, number>; counts: Record<string, number> } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const schema: Record<string, number> = {};
    for (const r of db
      .prepare<[], { namespace: string; version: number }>("SELECT namespace, version FROM schema_version")
      .all())
      schema[r.namespace] = r.version;
    const have = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => r.name),
    );
    const counts: Record<string, number> = {};
    for (const t of COUNTED_TABLES)
      if (have.has(t))
        counts[t] = db.prepare<[], { n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).get()?.n ?? 0;
    return { schema, counts };
  } finally {
    db.close();
  }
}

/**
 * Copies regular files and directories of an untrusted tree. Never follows a symlink: directory
 * entries come from readdir (lstat semantics), files are opened with O_NOFOLLOW and must still be
 * regular files once open (a file swapped for a symlink or a FIFO between listing and opening is
 * skipped, not followed or blocked on).
 */
export function copyTreeNoFollow(
  from: string,
  to: string,
  skipped: BackupManifest["skipped"],
  root: string,
): void {
  mkdirSync(to, { recursive: true });
  for (const ent of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, ent.name);
    const rel = relative(root, src).split(sep).join("/");
    if (ent.isSymbolicLink()) {
      skipped.push({ path: rel, why: "symlink (not followed)" });
      continue;
    }
    if (ent.isDirectory()) {
      copyTreeNoFollow(src, join(to, ent.name), skipped, root);
      continue;
    }
    if (!ent.isFile()) {
      skipped.push({ path: rel, why: "not a regular file" });
      continue;
    }
    let fd: number;
    try {
      fd = openSync(src, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      skipped.push({ path: rel, why: `cannot open: ${(err as NodeJS.ErrnoException).code ?? "error"}` });
      continue;
    }
    try {
      if (!fstatSync(fd).isFile()) {
        skipped.push({ path: rel, why: "not a regular file" });
        continue;
      }
      const out = openSync(join(to, ent.name), "wx", 0o600);
      try {
        const buf = Buffer.allocUnsafe(1 << 16);
        for (;;) {
          const n = readSync(fd, buf, 0, buf.length, null);
          if (n <= 0) break;
          writeSync(out, buf, 0, n);
        }
      } finally {
        closeSync(out);
      }
    } finally {
      closeSync(fd);
    }
  }
}

/** Every regular file under `dir`, relative, `/`-separated, sorted. */
export function listFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const ent of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, ent.name);
    if (ent.isDirectory()) out.push(...listFiles(p, base));
    else if (ent.isFile()) out.push(relative(base, p).split(sep).join("/"));
  }
  return out.sort();
}

function fileEntry(dir: string, path: string): ManifestFile {
  const full = join(dir, path);
  return { path, bytes: statSync(full).size, sha256: sha256File(full) };
}

export function sha256File(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}
