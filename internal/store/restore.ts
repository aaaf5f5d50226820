/**
 * Restoring a snapshot made by backup.ts into an instance that is not running.
 *
 * Invariants:
 * - refused while a daemon runs on the target data dir (its instance lock is live): the restore takes
 *   the lock itself and holds it throughout, so a daemon cannot start in the middle either;
 * - the manifest is checked before anything changes: known format, every listed file present with
 *   its size and sha256, no file outside the list; a snapshot without a manifest is refused;
 * - a backup is read as untrusted input (it may sit on a shared disk, or come from someone else): it
 *   is walked with lstat and refused whole when any entry is a link or not a regular file or folder
 *   (a `workspace` linked to `../../.ssh` would copy the owner's keys in), and every path the manifest
 *   lists must be one of the regular files found that way, so a recomputed manifest does not help;
 *   files are opened with O_NOFOLLOW; the database and config.yaml are copied through a descriptor
 *   opened the same way (the caller's {@link RestoreSteps.copyFile}) and held to the manifest's sha256
 *   as they are copied, so a file swapped after the check is refused, never followed;
 * - what the restore writes into the workspace and which database rows it keeps are the caller's
 *   ({@link RestoreSteps}: internal/importer/ writes through the workspace door and validates rows);
 * - nothing is deleted: the database and the workspace it replaces are renamed aside
 *   (`*.before-restore-<time>`), so a restore can itself be undone;
 * - the config file is written only where none exists (an existing one is the owner's, and may hold
 *   newer settings); the snapshot's copy stays in the backup.
 *
 * Over 300 lines on purpose: the checks of an untrusted snapshot (walk, manifest, signature, held
 * copies) and the one ordered swap they guard are one procedure; split, a step could be skipped.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { MANIFEST_SIG } from "./backup-key.js";
import { dirname, join } from "node:path";
import { acquireInstanceLock, InstanceLockedError } from "./lock.js";
import {
  BACKUP_FORMAT,
  BackupError,
  MANIFEST,
  copyTreeNoFollow,
  describeDb,
  type BackupManifest,
} from "./backup.js";

/** Reads and checks a snapshot's manifest against its files; throws BackupError naming the problem. */
export function verifyBackup(dir: string): BackupManifest {
  return inspectBackup(dir).manifest;
}

/** A checked backup: its manifest, the manifest's bytes as read, and its signature's text if any. */
export interface InspectedBackup {
  manifest: BackupManifest;
  manifestBytes: Buffer;
  /** `manifest.sig` (backup-key.ts), when the backup has one. */
  signature: string | undefined;
}

/**
 * {@link verifyBackup}, also returning the manifest's bytes (read once, without following a link) and
 * the signature, so whose backup it is is decided on exactly the bytes that were checked.
 */
export function inspectBackup(dir: string): InspectedBackup {
  const file = join(dir, MANIFEST);
  // First the whole tree without following anything: the manifest itself could be a link to a fifo.
  if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new BackupError("BACKUP_SOURCE", `${dir}: expected a backup directory, found none`);
  const found = new Set(scanBackup(dir));
  if (!found.has(MANIFEST))
    throw new BackupError("BACKUP_MANIFEST", `${dir} has no ${MANIFEST}: not a complete familiar backup`);
  const manifestBytes = readNoFollow(file, MAX_MANIFEST);
  let m: BackupManifest;
  try {
    m = JSON.parse(manifestBytes.toString("utf8")) as BackupManifest;
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
    const path = typeof f.path === "string" ? f.path : "";
    if (path === "" || path === MANIFEST || path.startsWith("/") || path.split("/").includes(".."))
      throw new BackupError("BACKUP_MANIFEST", `${file}: a listed path leaves the backup: ${String(f.path)}`);
    if (!found.has(path)) throw new BackupError("BACKUP_CHECKSUM", `${path} is missing from ${dir}`);
    const { bytes, sha256 } = hashNoFollow(join(dir, f.path));
    if (bytes !== f.bytes)
      throw new BackupError("BACKUP_CHECKSUM", `${f.path}: expected ${f.bytes} bytes, got ${bytes}`);
    if (sha256 !== f.sha256)
      throw new BackupError(
        "BACKUP_CHECKSUM",
        `${f.path}: sha256 ${sha256} does not match the manifest's ${f.sha256}`,
      );
    listed.add(f.path);
  }
  if (!listed.has("familiar.db")) throw new BackupError("BACKUP_MANIFEST", `${file} lists no familiar.db`);
  for (const p of found)
    if (p !== MANIFEST && p !== MANIFEST_SIG && !listed.has(p))
      throw new BackupError("BACKUP_MANIFEST", `${p} is in ${dir} but not in its manifest`);
  const signature = found.has(MANIFEST_SIG)
    ? readNoFollow(join(dir, MANIFEST_SIG), 1024).toString("utf8")
    : undefined;
  return { manifest: m, manifestBytes, signature };
}

/** Largest manifest read (a workspace of very many files still fits). */
const MAX_MANIFEST = 64 * 1024 * 1024;

/** A small file's bytes, opened without following a link, a regular file, at most `max` bytes. */
function readNoFollow(file: string, max: number): Buffer {
  const fd = openNoFollow(file);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new BackupError("BACKUP_UNSAFE", `${file} is not a regular file`);
    if (st.size > max) throw new BackupError("BACKUP_MANIFEST", `${file} is over ${max} bytes`);
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n <= 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

function openNoFollow(file: string): number {
  try {
    return openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw new BackupError(
      "BACKUP_UNSAFE",
      `${file}: cannot open it without following a link (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
}

/**
 * Every regular file of a backup, `/`-separated, found without following anything: a link or a
 * special file anywhere refuses the whole backup (BACKUP_UNSAFE), naming it and where it points.
 */
export function scanBackup(dir: string, rel = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const p = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(dir, p));
    if (st.isSymbolicLink())
      throw new BackupError(
        "BACKUP_UNSAFE",
        `${p} in ${dir} is a symbolic link (to ${readlinkSync(join(dir, p))}); a backup holds only files and folders: refused`,
      );
    if (st.isDirectory()) out.push(...scanBackup(dir, p));
    else if (st.isFile()) out.push(p);
    else
      throw new BackupError(
        "BACKUP_UNSAFE",
        `${p} in ${dir} is not a regular file or folder; a backup holds only files and folders: refused`,
      );
  }
  return out;
}

/** Size and sha256 of a file opened without following a link (the last part; scanBackup saw the rest). */
function hashNoFollow(file: string): { bytes: number; sha256: string } {
  const fd = openNoFollow(file);
  try {
    if (!fstatSync(fd).isFile()) throw new BackupError("BACKUP_UNSAFE", `${file} is not a regular file`);
    const h = createHash("sha256");
    const buf = Buffer.allocUnsafe(1 << 16);
    let bytes = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) break;
      h.update(buf.subarray(0, n));
      bytes += n;
    }
    return { bytes, sha256: h.digest("hex") };
  } finally {
    closeSync(fd);
  }
}

/**
 * The parts of a restore that belong to layers above the store: copying the backup's workspace into
 * the (new, empty) workspace, and deciding which rows of the restored database stay. Without them the
 * workspace is copied with {@link copyTreeNoFollow} and every row stays.
 */
export interface RestoreSteps {
  /**
   * Copies the backup's file `rel` (`familiar.db`, `config.yaml`) to the new file `dest` through a
   * descriptor opened without following a link (the caller's door); returns what it copied, which
   * must match the manifest or the copy is removed and the restore refused.
   */
  copyFile: (backupDir: string, rel: string, dest: string) => { bytes: number; sha256: string };
  copyWorkspace?: (backupDir: string, workspace: string) => void;
  /** Called on the restored copy of the database before the lock is released. */
  filterDb?: (dbFile: string) => void;
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
export function restoreBackup(dir: string, t: RestoreTarget, now: Date, steps: RestoreSteps): RestoreResult {
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
    const copyChecked = (rel: string, dest: string): void => {
      const want = manifest.files.find((f) => f.path === rel);
      const got = steps.copyFile(dir, rel, dest);
      if (!want || got.sha256 !== want.sha256 || got.bytes !== want.bytes) {
        rmSync(dest, { force: true });
        throw new BackupError(
          "BACKUP_CHECKSUM",
          `${rel} in ${dir} changed after it was checked (sha256 ${got.sha256}): refused, nothing restored`,
        );
      }
    };
    mkdirSync(t.dataDir, { recursive: true });
    const db = join(t.dataDir, "familiar.db");
    // Copied beside it first and held to the manifest: a refused copy leaves the old database in place.
    const incoming = `${db}.restoring-${stamp}`;
    copyChecked("familiar.db", incoming);
    aside(db);
    // The WAL and shared memory of the old database belong to it: never replayed into the restored one.
    aside(`${db}-wal`);
    aside(`${db}-shm`);
    renameSync(incoming, db);
    steps.filterDb?.(db);
    if (lstatSync(join(dir, "workspace"), { throwIfNoEntry: false })?.isDirectory()) {
      aside(t.workspace);
      mkdirSync(dirname(t.workspace), { recursive: true });
      if (steps.copyWorkspace) steps.copyWorkspace(dir, t.workspace);
      else copyTreeNoFollow(join(dir, "workspace"), t.workspace, [], join(dir, "workspace"));
    }
    let configWritten = false;
    if (manifest.files.some((f) => f.path === "config.yaml") && !existsSync(t.configFile)) {
      mkdirSync(dirname(t.configFile), { recursive: true });
      copyChecked("config.yaml", t.configFile);
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
