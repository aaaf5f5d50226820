/**
 * Restoring a snapshot made by backup.ts into an instance that is not running.
 *
 * Invariants:
 * - refused while a daemon runs on the target data dir (its instance lock is live): the restore takes
 *   the lock itself and holds it throughout, so a daemon cannot start in the middle either;
 * - the manifest is checked before anything changes: known format, every listed file present with
 *   its size and sha256, no file outside the list; a snapshot without a manifest is refused;
 * - nothing is deleted: the database and the workspace it replaces are renamed aside
 *   (`*.before-restore-<time>`), so a restore can itself be undone;
 * - the config file is written only where none exists (an existing one is the owner's, and may hold
 *   newer settings); the snapshot's copy stays in the backup.
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  copyFileSync,
} from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { acquireInstanceLock, InstanceLockedError } from "./lock.js";
import {
  BACKUP_FORMAT,
  BackupError,
  MANIFEST,
  copyTreeNoFollow,
  describeDb,
  listFiles,
  sha256File,
  type BackupManifest,
} from "./backup.js";

/** Reads and checks a snapshot's manifest against its files; throws BackupError naming the problem. */
export function verifyBackup(dir: string): BackupManifest {
  const file = join(dir, MANIFEST);
  if (!existsSync(file))
    throw new BackupError("BACKUP_MANIFEST", `${dir} has no ${MANIFEST}: not a complete familiar backup`);
  let m: BackupManifest;
  try {
    m = JSON.parse(readFileSync(file, "utf8")) as BackupManifest;
  } catch (err) {
    throw new BackupError("BACKUP_MANIFEST", `${file} is not JSON: ${(err as Error).message}`);
  }
  if (m.format !== BACKUP_FORMAT || !Array.isArray(m.files))
    throw new BackupError(
      "BACKUP_MANIFEST",
      `${file}: expected format ${BACKUP_FORMAT}, got ${String(m.format)}`,
    );
  const listed = new Set<string>();
  for (const f of m.files) {
    const p = resolve(dir, f.path);
    if (!p.startsWith(resolve(dir) + sep) || f.path === MANIFEST)
      throw new BackupError("BACKUP_MANIFEST", `${file}: a listed path leaves the backup: ${f.path}`);
    if (!existsSync(p)) throw new BackupError("BACKUP_CHECKSUM", `${f.path} is missing from ${dir}`);
    const size = statSync(p).size;
    if (size !== f.bytes)
      throw new BackupError("BACKUP_CHECKSUM", `${f.path}: expected ${f.bytes} bytes, got ${size}`);
    const sum = sha256File(p);
    if (sum !== f.sha256)
      throw new BackupError(
        "BACKUP_CHECKSUM",
        `${f.path}: sha256 ${sum} does not match the manifest's ${f.sha256}`,
      );
    listed.add(f.path);
  }
  if (!listed.has("familiar.db")) throw new BackupError("BACKUP_MANIFEST", `${file} lists no familiar.db`);
  for (const p of listFiles(dir))
    if (p !== MANIFEST && !listed.has(p))
      throw new BackupError("BACKUP_MANIFEST", `${p} is in ${dir} but not in its manifest`);
  return m;
}

export interface RestoreTarget {
  dataDir: string;
  workspace: string;
  configFile: string;
}

export interface RestoreResult {
  manifest: BackupManifest;
  counts: Record<string, number>;
  /** What was renamed aside. */
  movedAside: string[];
  configWritten: boolean;
}

/** Restores `dir` into the target instance. Throws BackupError (BACKUP_LIVE when a daemon runs). */
export function restoreBackup(dir: string, t: RestoreTarget, now = new Date()): RestoreResult {
  let lock;
  try {
    lock = acquireInstanceLock(t.dataDir);
  } catch (err) {
    if (err instanceof InstanceLockedError)
      throw new BackupError(
        "BACKUP_LIVE",
        `refusing to restore: a familiar daemon (pid ${err.pid}) is running on ${t.dataDir}; stop it first (familiar stop, or systemctl stop familiar)`,
      );
    throw err;
  }
  try {
    const manifest = verifyBackup(dir);
    const stamp = now.toISOString().replace(/[:.]/g, "-");
    const movedAside: string[] = [];
    const aside = (p: string): void => {
      if (!existsSync(p)) return;
      const to = `${p}.before-restore-${stamp}`;
      renameSync(p, to);
      movedAside.push(to);
    };
    mkdirSync(t.dataDir, { recursive: true });
    const db = join(t.dataDir, "familiar.db");
    aside(db);
    // The WAL and shared memory of the old database belong to it: never replayed into the restored one.
    aside(`${db}-wal`);
    aside(`${db}-shm`);
    copyFileSync(join(dir, "familiar.db"), db);
    if (existsSync(join(dir, "workspace"))) {
      aside(t.workspace);
      mkdirSync(dirname(t.workspace), { recursive: true });
      copyTreeNoFollow(join(dir, "workspace"), t.workspace, [], join(dir, "workspace"));
    }
    let configWritten = false;
    if (existsSync(join(dir, "config.yaml")) && !existsSync(t.configFile)) {
      mkdirSync(dirname(t.configFile), { recursive: true });
      copyFileSync(join(dir, "config.yaml"), t.configFile);
      configWritten = true;
    }
    const { counts } = describeDb(db);
    return { manifest, counts, movedAside, configWritten };
  } finally {
    lock.release();
  }
}

/** Lists the complete snapshots in a directory, newest last. */
export function listBackups(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name.startsWith("familiar-backup-") && !e.name.endsWith(".partial"))
    .filter((e) => existsSync(join(dir, e.name, MANIFEST)))
    .map((e) => join(dir, e.name))
    .sort();
}

/** Removes the oldest complete snapshots beyond `keep`; returns what was removed. */
export function pruneBackups(dir: string, keep: number): string[] {
  const all = listBackups(dir);
  const gone = all.slice(0, Math.max(0, all.length - keep));
  for (const d of gone) rmSync(d, { recursive: true, force: true });
  return gone;
}
