/**
 * Reading a directory we do not trust (an OpenClaw state dir, a workspace) without being led out of
 * it. Invariants:
 * - nothing here writes, renames or deletes; files are opened read-only;
 * - a symlink is never followed: a path is refused when any part of it below the root is a symlink
 *   (checked with lstat component by component), so a planted `SOUL.md -> ~/.ssh/id_rsa` or
 *   `skills -> /` is reported, not read;
 * - every read is capped (a file over its cap is refused, not truncated), so a huge or endless file
 *   cannot exhaust memory;
 * - only regular files and directories are read (no FIFOs, devices or sockets, which could block).
 */
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readSync, constants } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

/** Refused read: what was expected and what was found. */
export class UntrustedPathError extends Error {
  constructor(
    readonly code: "SYMLINK" | "OUTSIDE" | "NOT_FILE" | "TOO_LARGE" | "MISSING",
    message: string,
  ) {
    super(message);
    this.name = "UntrustedPathError";
  }
}

export interface TreeEntry {
  name: string;
  kind: "file" | "dir" | "symlink" | "other";
  size: number;
  /** Any execute bit set (files only). */
  executable: boolean;
}

/** A directory read as untrusted input. */
export class SafeTree {
  readonly root: string;
  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Absolute path of `rel`, refusing `..` escapes and symlinks on the way. */
  private check(rel: string): string {
    if (isAbsolute(rel)) throw new UntrustedPathError("OUTSIDE", `expected a relative path, got ${rel}`);
    const abs = resolve(this.root, rel);
    const r = relative(this.root, abs);
    if (r.startsWith("..") || isAbsolute(r))
      throw new UntrustedPathError("OUTSIDE", `${rel} points outside ${this.root}`);
    let cur = this.root;
    const rootSt = lstatSync(cur, { throwIfNoEntry: false });
    if (!rootSt) throw new UntrustedPathError("MISSING", `${this.root} does not exist`);
    if (rootSt.isSymbolicLink())
      throw new UntrustedPathError("SYMLINK", `${this.root} is a symlink; pass the real directory`);
    for (const part of r === "" ? [] : r.split(sep)) {
      cur = join(cur, part);
      const st = lstatSync(cur, { throwIfNoEntry: false });
      if (!st) throw new UntrustedPathError("MISSING", `${join(this.root, r)} does not exist`);
      if (st.isSymbolicLink()) throw new UntrustedPathError("SYMLINK", `${cur} is a symlink (not followed)`);
    }
    return abs;
  }

  /** True when `rel` is a regular file (not a symlink) inside the tree. */
  isFile(rel: string): boolean {
    try {
      return lstatSync(this.check(rel)).isFile();
    } catch {
      return false;
    }
  }

  isDir(rel: string): boolean {
    try {
      return lstatSync(this.check(rel)).isDirectory();
    } catch {
      return false;
    }
  }

  /** Entries of a directory (empty when it is absent), sorted by name; symlinks are reported, not followed. */
  list(rel: string): TreeEntry[] {
    let abs: string;
    try {
      abs = this.check(rel);
      if (!lstatSync(abs).isDirectory()) return [];
    } catch (err) {
      if (err instanceof UntrustedPathError && err.code === "MISSING") return [];
      throw err;
    }
    const out: TreeEntry[] = [];
    for (const name of readdirSync(abs).sort()) {
      const st = lstatSync(join(abs, name));
      out.push({
        name,
        kind: st.isSymbolicLink() ? "symlink" : st.isFile() ? "file" : st.isDirectory() ? "dir" : "other",
        size: st.size,
        executable: st.isFile() && (st.mode & 0o111) !== 0,
      });
    }
    return out;
  }

  /** The bytes of a regular file, refusing symlinks (O_NOFOLLOW too), non-files and files over `max`. */
  read(rel: string, max: number): Buffer {
    const abs = this.check(rel);
    // O_NOFOLLOW closes the race between the lstat walk and the open for the last component.
    const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new UntrustedPathError("NOT_FILE", `${abs}: expected a regular file`);
      if (st.size > max)
        throw new UntrustedPathError(
          "TOO_LARGE",
          `${abs}: ${st.size} bytes, more than the ${max} read at most`,
        );
      const buf = Buffer.alloc(st.size);
      let off = 0;
      while (off < st.size) {
        const n = readSync(fd, buf, off, st.size - off, off);
        if (n === 0) break;
        off += n;
      }
      return buf.subarray(0, off);
    } finally {
      closeSync(fd);
    }
  }

  readText(rel: string, max: number): string {
    return this.read(rel, max).toString("utf8");
  }

  /** The absolute path of `rel` after the same checks (for copying a database file). */
  pathOf(rel: string): string {
    return this.check(rel);
  }
}
