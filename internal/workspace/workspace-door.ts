/**
 * The one door to the workspace for the daemon's own reads and writes (invariant 1 of
 * docs/security.md): prompt files, MEMORY.md and memory/, the memory index, skills, agent files,
 * prompt templates, HEARTBEAT.md, the media inbox. Everything under the workspace can be written by a
 * sandboxed command, so everything read here is untrusted input, and the daemon never acts on it with
 * its own authority:
 *
 * - paths are workspace-relative and plain (no absolute path, no `..`);
 * - no symlink is followed at any step ({@link walkToParent}); one met is refused with a
 *   {@link WorkspaceError} that names it (`PATH_SYMLINK_REFUSED`);
 * - only regular files are opened (a fifo, a device or a folder is refused; opens are non-blocking,
 *   so a fifo cannot hang the daemon);
 * - reads are capped (`maxBytes`: a bigger file is refused, never half-read into the prompt);
 * - writes refuse a file with more than one hard link (it could be another name of a file outside);
 *   files are created 0600 and folders 0700.
 *
 * The model's own file tools (`internal/tools/fs-tools.ts`) use `safe-open.ts`, which may follow a
 * link that stays inside the workspace; the daemon's own files here never follow one.
 *
 * Over 300 lines on purpose: every read, write, append and rewrite the daemon does in the workspace is
 * here, so one review sees all of the door; the walk itself is in walk.ts.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { open } from "node:fs/promises";
import {
  childRef,
  closeDirs,
  joinRel,
  linkRefused,
  lstatIn,
  walkToDir,
  walkToParent,
  type WalkedDir,
} from "./walk.js";
import { WorkspaceError } from "./workspace-error.js";

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Default read cap: far above any prompt file or note, far below what would hurt. */
export const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;

/** A file read through the door. */
export interface DoorFile {
  text: string;
  size: number;
  mtimeMs: number;
}

function openError(err: unknown, ref: string, rel: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ELOOP") return linkRefused(ref, rel);
  if (code === "ENOENT") return new WorkspaceError("FILE_NOT_FOUND", `"${rel}" does not exist`);
  if (code === "EISDIR") return new WorkspaceError("FILE_IS_DIR", `"${rel}" is a folder, not a file`);
  if (code === "ENXIO") return new WorkspaceError("FILE_NOT_REGULAR", `"${rel}" is not a regular file`);
  if (code === "ENOTDIR") return new WorkspaceError("NOT_A_DIR", `a part of "${rel}" is not a folder`);
  return err;
}

/** Checks an opened fd: a regular file, under the cap. Returns its stat. */
function checkOpened(fd: number, rel: string, maxBytes: number): ReturnType<typeof fstatSync> {
  const st = fstatSync(fd);
  if (!st.isFile()) throw new WorkspaceError("FILE_NOT_REGULAR", `"${rel}" is not a regular file`);
  if (st.size > maxBytes)
    throw new WorkspaceError(
      "FILE_TOO_LARGE",
      `"${rel}" is ${st.size} bytes; the daemon reads at most ${maxBytes} bytes of it`,
    );
  return st;
}

/** A file read through the door as bytes (binary files: an import's hashes, a restore's copy). */
export interface DoorBytes {
  data: Buffer;
  mtimeMs: number;
}

/**
 * Reads a workspace file's bytes. Undefined when it (or a folder on the way) does not exist; throws
 * {@link WorkspaceError} for a link, a non-regular file or one over `maxBytes`.
 */
export function readWorkspaceBytesSync(
  root: string,
  rel: string,
  opts: { maxBytes?: number } = {},
): DoorBytes | undefined {
  const max = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const w = walkToParent(root, rel, false);
  if (!w) return undefined;
  try {
    const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
    const shown = joinRel(dir, w.name);
    const st0 = lstatIn(dir, w.name);
    if (!st0) return undefined;
    if (st0.isSymbolicLink()) throw linkRefused(childRef(dir, w.name), shown);
    if (!st0.isFile()) throw new WorkspaceError("FILE_NOT_REGULAR", `"${shown}" is not a regular file`);
    let fd: number;
    try {
      fd = openSync(childRef(dir, w.name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      const e = openError(err, childRef(dir, w.name), shown);
      if (e instanceof WorkspaceError && e.code === "FILE_NOT_FOUND") return undefined;
      throw e;
    }
    try {
      const st = checkOpened(fd, shown, max);
      // Read at most max + 1 bytes: a file that grows while being read is still refused, not half-read.
      const buf = Buffer.alloc(Math.min(Number(st.size), max) + 1);
      let got = 0;
      for (;;) {
        const n = readSync(fd, buf, got, buf.length - got, null);
        if (n === 0) break;
        got += n;
        if (got === buf.length) break;
      }
      if (got > max)
        throw new WorkspaceError("FILE_TOO_LARGE", `"${shown}" grew past ${max} bytes while being read`);
      return { data: buf.subarray(0, got), mtimeMs: Number(st.mtimeMs) };
    } finally {
      closeSync(fd);
    }
  } finally {
    closeDirs(w.dirs);
  }
}

/**
 * Reads a workspace file as UTF-8. Undefined when it (or a folder on the way) does not exist; throws
 * {@link WorkspaceError} for a link, a non-regular file or one over `maxBytes`.
 */
export function readWorkspaceFileSync(
  root: string,
  rel: string,
  opts: { maxBytes?: number } = {},
): DoorFile | undefined {
  const b = readWorkspaceBytesSync(root, rel, opts);
  return b && { text: b.data.toString("utf8"), size: b.data.length, mtimeMs: b.mtimeMs };
}

/** {@link readWorkspaceFileSync}, for async callers. */
export async function readWorkspaceFile(
  root: string,
  rel: string,
  opts: { maxBytes?: number } = {},
): Promise<DoorFile | undefined> {
  return readWorkspaceFileSync(root, rel, opts);
}

/** Size and mtime of a regular workspace file without reading it; undefined when absent. */
export function statWorkspaceFileSync(
  root: string,
  rel: string,
): { size: number; mtimeMs: number } | undefined {
  const w = walkToParent(root, rel, false);
  if (!w) return undefined;
  try {
    const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
    const st = lstatIn(dir, w.name);
    if (!st) return undefined;
    if (st.isSymbolicLink()) throw linkRefused(childRef(dir, w.name), joinRel(dir, w.name));
    if (!st.isFile())
      throw new WorkspaceError("FILE_NOT_REGULAR", `"${joinRel(dir, w.name)}" is not a regular file`);
    return { size: Number(st.size), mtimeMs: Number(st.mtimeMs) };
  } finally {
    closeDirs(w.dirs);
  }
}

/** One entry of a workspace folder, as it is (links are listed as links, never followed). */
export interface DoorEntry {
  name: string;
  kind: "file" | "dir" | "link" | "other";
}

/** The entries of a workspace folder, sorted by name; empty when the folder does not exist. */
export function listWorkspaceDirSync(root: string, rel: string): DoorEntry[] {
  const dirs = walkToDir(root, rel);
  if (!dirs) return [];
  try {
    const dir = dirs[dirs.length - 1] as WalkedDir;
    return readdirSync(dir.ref, { withFileTypes: true })
      .map((e): DoorEntry => {
        const kind = e.isSymbolicLink() ? "link" : e.isFile() ? "file" : e.isDirectory() ? "dir" : "other";
        return { name: e.name, kind };
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } finally {
    closeDirs(dirs);
  }
}

/** The refusal for a link listed by {@link listWorkspaceDirSync} (to log it, or to skip it named). */
export function linkEntryRefusal(root: string, relDir: string, name: string): WorkspaceError {
  const dirs = walkToDir(root, relDir);
  const rel = relDir === "." || relDir === "" ? name : `${relDir}/${name}`;
  if (!dirs) return new WorkspaceError("FILE_NOT_FOUND", `"${rel}" does not exist`);
  try {
    return linkRefused(childRef(dirs[dirs.length - 1] as WalkedDir, name), rel);
  } finally {
    closeDirs(dirs);
  }
}

/** Refuses a file another hard link also names: a write would land in that other file too. */
function checkSingleLink(st: ReturnType<typeof fstatSync>, rel: string): void {
  if (Number(st.nlink) > 1)
    throw new WorkspaceError(
      "FILE_HARDLINKED",
      `"${rel}" has ${st.nlink} hard links; the daemon does not write to a file that has other names`,
    );
}

/**
 * Appends text to a workspace file, creating it (0600) and, with `mkdirs`, its folders (0700).
 * `initial` is written instead of `text` when the file is new or empty. Returns whether it was new.
 */
export function appendWorkspaceFileSync(
  root: string,
  rel: string,
  text: string,
  opts: { mkdirs?: boolean; initial?: string; maxBytes?: number } = {},
): { created: boolean } {
  const w = walkToParent(root, rel, opts.mkdirs ?? false);
  if (!w) throw new WorkspaceError("FILE_NOT_FOUND", `the folder of "${rel}" does not exist`);
  try {
    const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
    const shown = joinRel(dir, w.name);
    let fd: number;
    try {
      fd = openSync(childRef(dir, w.name), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o600);
    } catch (err) {
      throw openError(err, childRef(dir, w.name), shown);
    }
    try {
      const st = checkOpened(fd, shown, opts.maxBytes ?? Number.MAX_SAFE_INTEGER);
      checkSingleLink(st, shown);
      const created = Number(st.size) === 0;
      writeSync(fd, created && opts.initial !== undefined ? opts.initial : text);
      return { created };
    } finally {
      closeSync(fd);
    }
  } finally {
    closeDirs(w.dirs);
  }
}

/**
 * The walked name made free for an exclusive create: a folder there is refused, anything else (a
 * file, a link planted at it) is unlinked, which never touches a link's target.
 */
function clearedName(w: { dirs: WalkedDir[]; name: string }): { ref: string; shown: string } {
  const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
  const ref = childRef(dir, w.name);
  const shown = joinRel(dir, w.name);
  const st = lstatIn(dir, w.name);
  if (st?.isDirectory()) throw new WorkspaceError("FILE_IS_DIR", `"${shown}" is a folder`);
  if (st) unlinkSync(ref);
  return { ref, shown };
}

/**
 * Writes a new file (the media inbox), creating its folders (0700) and the file (0600). A name that
 * already exists (a file, or a link planted at it) is removed first (unlinking a link never touches
 * its target); the new file is created exclusively, so nothing planted is written through.
 */
export async function writeNewWorkspaceFile(root: string, rel: string, data: Buffer): Promise<void> {
  const w = walkToParent(root, rel, true);
  if (!w) throw new WorkspaceError("FILE_NOT_FOUND", `the folder of "${rel}" does not exist`);
  try {
    const { ref, shown } = clearedName(w);
    let h;
    try {
      h = await open(ref, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o600);
    } catch (err) {
      throw openError(err, ref, shown);
    }
    try {
      await h.writeFile(data);
    } finally {
      await h.close();
    }
  } finally {
    closeDirs(w.dirs);
  }
}

/**
 * {@link writeNewWorkspaceFile} for synchronous callers that replace whole files (an import, a
 * restore): the name is unlinked first (a link planted there is removed, never written through), the
 * file created exclusively, 0600, or 0700 when `executable` (a skill's script the owner took).
 */
export function writeWorkspaceFileSync(
  root: string,
  rel: string,
  data: Buffer,
  opts: { executable?: boolean } = {},
): void {
  const w = walkToParent(root, rel, true);
  if (!w) throw new WorkspaceError("FILE_NOT_FOUND", `the folder of "${rel}" does not exist`);
  try {
    const { ref, shown } = clearedName(w);
    let fd: number;
    try {
      fd = openSync(
        ref,
        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
        opts.executable ? 0o700 : 0o600,
      );
    } catch (err) {
      throw openError(err, ref, shown);
    }
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    } finally {
      closeSync(fd);
    }
  } finally {
    closeDirs(w.dirs);
  }
}

/** Creates a workspace folder (and its parents, 0700) unless it exists; a link on the way is refused. */
export function ensureWorkspaceDirSync(root: string, rel: string): void {
  const w = walkToParent(root, rel, true);
  if (!w) return;
  try {
    const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
    const st = lstatIn(dir, w.name);
    if (st?.isSymbolicLink()) throw linkRefused(childRef(dir, w.name), joinRel(dir, w.name));
    if (st && !st.isDirectory())
      throw new WorkspaceError("NOT_A_DIR", `"${joinRel(dir, w.name)}" is not a folder`);
    if (!st) mkdirSync(childRef(dir, w.name), { mode: 0o700 });
  } finally {
    closeDirs(w.dirs);
  }
}

/**
 * Rewrites an existing workspace file in place: `change` gets its text and returns the new text (or
 * throws to leave it untouched). Same invariants as an append: no link followed at any step, regular
 * files only, capped at `maxBytes`, refused when the file has other names (hard links); never creates.
 * The owner's memory edits (the console's Memory view) are the caller.
 */
export function rewriteWorkspaceFileSync(
  root: string,
  rel: string,
  change: (text: string) => string,
  opts: { maxBytes?: number } = {},
): void {
  const max = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const w = walkToParent(root, rel, false);
  if (!w) throw new WorkspaceError("FILE_NOT_FOUND", `the folder of "${rel}" does not exist`);
  try {
    const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
    const shown = joinRel(dir, w.name);
    let fd: number;
    try {
      fd = openSync(childRef(dir, w.name), O_RDWR | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      throw openError(err, childRef(dir, w.name), shown);
    }
    try {
      const st = checkOpened(fd, shown, max);
      checkSingleLink(st, shown);
      const buf = Buffer.alloc(Number(st.size));
      let got = 0;
      while (got < buf.length) {
        const n = readSync(fd, buf, got, buf.length - got, got);
        if (n === 0) break;
        got += n;
      }
      const next = Buffer.from(change(buf.subarray(0, got).toString("utf8")), "utf8");
      ftruncateSync(fd, 0);
      let off = 0;
      while (off < next.length) off += writeSync(fd, next, off, next.length - off, off);
    } finally {
      closeSync(fd);
    }
  } finally {
    closeDirs(w.dirs);
  }
}
