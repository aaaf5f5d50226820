/**
 * Copies one file out of a tree someone else may have written (a backup being restored) through the
 * same door as the workspace: the walk beneath `root` follows no link (walk.ts), the file is opened
 * with O_NOFOLLOW and O_NONBLOCK and must be a regular file once open (fstat), so a link or a fifo
 * swapped in after a check is refused, never followed or blocked on. The copy is streamed (a database
 * may be far larger than any workspace read) and hashed on the way, so the caller can hold it to the
 * sha256 it checked before.
 *
 * Invariant: the destination is created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, 0600); on any
 * failure it is removed, so a refused copy leaves nothing behind.
 */
import { closeSync, constants, fstatSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { createHash } from "node:crypto";
import { childRef, closeDirs, joinRel, linkRefused, lstatIn, walkToParent, type WalkedDir } from "./walk.js";
import { WorkspaceError } from "./workspace-error.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;

/** What was copied: its size and sha256. */
export interface CopiedFile {
  bytes: number;
  sha256: string;
}

/**
 * Copies `<root>/<rel>` to the new file `dest`. Throws {@link WorkspaceError} (a link on the way or
 * at the end, not a regular file, missing); `dest` is then absent.
 */
export function copyFileOutSync(root: string, rel: string, dest: string): CopiedFile {
  const w = walkToParent(root, rel, false);
  if (!w) throw new WorkspaceError("FILE_NOT_FOUND", `"${rel}" does not exist`);
  try {
    const dir = w.dirs[w.dirs.length - 1] as WalkedDir;
    const shown = joinRel(dir, w.name);
    const st0 = lstatIn(dir, w.name);
    if (!st0) throw new WorkspaceError("FILE_NOT_FOUND", `"${shown}" does not exist`);
    if (st0.isSymbolicLink()) throw linkRefused(childRef(dir, w.name), shown);
    let fd: number;
    try {
      fd = openSync(childRef(dir, w.name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ELOOP") throw linkRefused(childRef(dir, w.name), shown);
      if ((err as NodeJS.ErrnoException).code === "ENXIO")
        throw new WorkspaceError("FILE_NOT_REGULAR", `"${shown}" is not a regular file`);
      throw err;
    }
    try {
      if (!fstatSync(fd).isFile())
        throw new WorkspaceError("FILE_NOT_REGULAR", `"${shown}" is not a regular file`);
      return streamTo(fd, dest);
    } finally {
      closeSync(fd);
    }
  } finally {
    closeDirs(w.dirs);
  }
}

function streamTo(fd: number, dest: string): CopiedFile {
  const out = openSync(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o600);
  let ok = false;
  try {
    const h = createHash("sha256");
    const buf = Buffer.allocUnsafe(1 << 16);
    let bytes = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) break;
      h.update(buf.subarray(0, n));
      let off = 0;
      while (off < n) off += writeSync(out, buf, off, n - off);
      bytes += n;
    }
    ok = true;
    return { bytes, sha256: h.digest("hex") };
  } finally {
    closeSync(out);
    if (!ok) unlinkSync(dest);
  }
}
