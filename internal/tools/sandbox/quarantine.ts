/**
 * Holding desk entries in `<data_dir>/quarantine/<id>/` (owner-only, out of the sandbox's sight) and
 * putting them back when the owner keeps them.
 *
 * INVARIANTS
 * - Held content is COPIED, never kept by inode: a file is read through a descriptor opened without
 *   following a link at any step, its bytes are written to a new file in the quarantine and hashed,
 *   and only then is the desk's name removed. A hard link the command kept elsewhere on the desk can
 *   change its own inode afterwards; the held copy does not change.
 * - What is restored is byte for byte what the owner was shown: each copy is hashed again before it
 *   is written back, and a copy whose hash differs from the one recorded is not restored.
 * - Every desk path is reached through its parent folder's descriptor opened with O_NOFOLLOW at each
 *   step (created as needed on restore), and a restore never writes over a name that exists again:
 *   nothing is written outside the desk, whatever a command left behind.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readlinkSync,
  renameSync,
  rmSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import type { HeldEntry } from "./desk-scan.js";
import { openStrict } from "./pinned-fds.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_WRONLY, O_CREAT, O_EXCL } = constants;

/** One held entry as recorded in the quarantine's manifest. */
export interface HeldRecord {
  rel: string;
  kind: "file" | "dir" | "link" | "other";
  category: string;
  /** Permission bits to restore with. */
  mode: number;
  size: number;
  /** sha256 of the copy (files). */
  sha256?: string;
  /** The link's target, as read (links). */
  target?: string;
}

/** A set of held entries. */
export interface Held {
  /** The quarantine folder (under the data dir); the copies are in `files/`. */
  dir: string;
  records: HeldRecord[];
  /** Paths that could not be held (gone, or reachable only through a link now). */
  failed: string[];
}

/** A descriptor of `rel`'s parent folder under `root`, created as needed, never through a link. */
function parentFd(root: string, rel: string, create: boolean): number | undefined {
  const parts = dirname(rel)
    .split("/")
    .filter((p) => p && p !== ".");
  let fd: number;
  try {
    fd = openSync(root, O_RDONLY | O_DIRECTORY);
  } catch {
    return undefined;
  }
  for (const part of parts) {
    const path = `/proc/self/fd/${fd}/${part}`;
    try {
      if (create && !lstatSync(path, { throwIfNoEntry: false })) mkdirSync(path, { mode: 0o700 });
      const next = openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      closeSync(fd);
      fd = next;
    } catch {
      closeSync(fd);
      return undefined;
    }
  }
  return fd;
}

function base(rel: string): string {
  return rel.slice(rel.lastIndexOf("/") + 1);
}

/** Copies the open file `src` to a new file `to`, returning the sha256 of what was copied. */
function copyOut(src: number, to: string): string {
  mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
  const out = openSync(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  const hash = createHash("sha256");
  const buf = Buffer.alloc(256 * 1024);
  try {
    for (;;) {
      const n = readSync(src, buf, 0, buf.length, null);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      writeSync(out, buf, 0, n);
    }
  } finally {
    closeSync(out);
  }
  return hash.digest("hex");
}

/** Holds one non-folder entry: copy (or record), then remove the desk's name. */
function holdOne(desk: string, e: HeldEntry, files: string): HeldRecord | undefined {
  const rec: HeldRecord = {
    rel: e.rel,
    kind: e.kind,
    category: e.category,
    mode: e.mode & 0o777,
    size: e.size,
  };
  const parent = parentFd(desk, e.rel, false);
  if (parent === undefined) return undefined;
  const at = `/proc/self/fd/${parent}/${base(e.rel)}`;
  try {
    const st = lstatSync(at, { throwIfNoEntry: false });
    if (!st) return undefined;
    if (st.isSymbolicLink()) Object.assign(rec, { kind: "link", target: readlinkSync(at) });
    else if (st.isFile()) {
      const fd = openStrict(desk, join(desk, e.rel));
      if (fd === undefined) return undefined;
      try {
        const now = fstatSync(fd);
        if (!now.isFile()) return undefined;
        Object.assign(rec, { kind: "file", size: now.size, mode: now.mode & 0o777 });
        rec.sha256 = copyOut(fd, join(files, e.rel));
      } finally {
        closeSync(fd);
      }
    } else rec.kind = "other";
    unlinkSync(at);
    return rec;
  } catch {
    return undefined;
  } finally {
    closeSync(parent);
  }
}

/**
 * Holds `entries` (desk-relative, sorted so folders come before their contents) from `desk` in a new
 * folder under `quarantineRoot`. Folders that were new are removed once empty.
 */
export function hold(desk: string, entries: readonly HeldEntry[], quarantineRoot: string): Held {
  mkdirSync(quarantineRoot, { recursive: true, mode: 0o700 });
  const dir = mkdtempSync(join(quarantineRoot, `${new Date().toISOString().replace(/[:.]/g, "-")}-`));
  const files = join(dir, "files");
  mkdirSync(files, { mode: 0o700 });
  const out: Held = { dir, records: [], failed: [] };
  for (const e of entries) {
    if (e.kind === "dir") {
      out.records.push({ rel: e.rel, kind: "dir", category: e.category, mode: e.mode & 0o777, size: 0 });
      continue;
    }
    const rec = holdOne(desk, e, files);
    if (rec) out.records.push(rec);
    else out.failed.push(e.rel);
  }
  // Deepest first: a folder goes once what was held in it has gone (one with plain files stays).
  for (const rec of [...out.records].reverse())
    if (rec.kind === "dir") {
      const parent = parentFd(desk, rec.rel, false);
      if (parent === undefined) continue;
      try {
        rmdirSync(`/proc/self/fd/${parent}/${base(rec.rel)}`);
      } catch {
        /* not empty, or gone: nothing of it is trusted either way */
      } finally {
        closeSync(parent);
      }
    }
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(out.records, null, 1), { mode: 0o600 });
  return out;
}

/** The held copy of a file, or undefined when it is missing or no longer what was recorded. */
export function heldBytes(h: Held, rec: HeldRecord): Buffer | undefined {
  if (rec.kind !== "file" || !rec.sha256) return undefined;
  let bytes: Buffer;
  try {
    const fd = openSync(join(h.dir, "files", rec.rel), O_RDONLY | O_NOFOLLOW);
    try {
      bytes = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  return createHash("sha256").update(bytes).digest("hex") === rec.sha256 ? bytes : undefined;
}

/** Puts one record back; false when it could not (a name in the way, a changed copy, a link). */
function restoreOne(desk: string, h: Held, rec: HeldRecord): boolean {
  const parent = parentFd(desk, rec.rel, true);
  if (parent === undefined) return false;
  const at = `/proc/self/fd/${parent}/${base(rec.rel)}`;
  try {
    const exists = lstatSync(at, { throwIfNoEntry: false });
    if (rec.kind === "dir") {
      if (exists) return exists.isDirectory();
      mkdirSync(at, { mode: 0o700 });
      return true;
    }
    if (exists) return false;
    if (rec.kind === "link" && rec.target !== undefined) {
      symlinkSync(rec.target, at);
      return true;
    }
    const bytes = heldBytes(h, rec);
    if (!bytes) return false;
    const fd = openSync(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, rec.mode & 0o777);
    try {
      writeSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    return true;
  } catch {
    return false;
  } finally {
    closeSync(parent);
  }
}

/**
 * Puts the held entries back (the owner kept them). A name that exists again meanwhile is not
 * overwritten, and fifos and sockets are not recreated: those are listed in `failed` and stay held.
 */
export function release(desk: string, h: Held): { restored: string[]; failed: string[] } {
  const restored: string[] = [];
  const failed: string[] = [];
  for (const rec of h.records)
    if (rec.kind !== "other" && restoreOne(desk, h, rec)) restored.push(rec.rel);
    else failed.push(rec.rel);
  if (failed.length === 0) drop(h);
  return { restored, failed };
}

/** Deletes the quarantine folder (the owner said no). */
export function drop(h: Held): void {
  rmSync(h.dir, { recursive: true, force: true });
}

/**
 * Moves the whole desk into the quarantine (or, when the data dir is on another file system, beside
 * the desk under a dot name) and makes a fresh one; returns where it went. For a desk too big to
 * compare: nothing on it is checked, so none of it stays where programs look.
 */
export function moveDeskAside(desk: string, quarantineRoot: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  mkdirSync(quarantineRoot, { recursive: true, mode: 0o700 });
  let to = join(quarantineRoot, `${stamp}-desk-overflow`);
  try {
    renameSync(desk, to);
  } catch {
    to = join(dirname(desk), `.desk-overflow-${stamp}`);
    renameSync(desk, to);
  }
  mkdirSync(desk, { mode: 0o700 });
  return to;
}
