/**
 * Invariant 4 (docs/security.md): a sandboxed command cannot leave behind, without the owner's
 * approval, a file another program runs later. Existing protected files are bound read-only
 * (owner-tool-files.ts); NEW ones cannot be refused by a mount (there is nothing to bind over a
 * name that does not exist yet, and `git init` must work), so the workspace's protected paths are
 * snapshotted before each command and compared after: whatever is new or changed is moved to a
 * quarantine folder in the data dir and the owner is asked once (plant-guard.ts).
 *
 * The snapshot covers what {@link findOwnerToolFiles} protects, to the same depth (protected names
 * in folders at depth 0-3, so nested repositories to depth 3), compared case-insensitively, with
 * symlinks recorded as links (never followed) and file contents hashed (an `mtime` can be reset).
 * Breadth first, every name of each listed folder checked, at most 20,000 folders: a flood of files
 * cannot hide a planted name, a flood of folders can only push the deepest ones past the cap, and a
 * scan that hit a cap says so (`complete: false`) and the guard reports it.
 */
import { createHash } from "node:crypto";
import { closeSync, fstatSync, lstatSync, readdirSync, readlinkSync, readSync } from "node:fs";
import { join, relative } from "node:path";
import { DIRS, FILES, SKIP } from "./owner-tool-files.js";
import { openStrict } from "./pinned-fds.js";

/** Path (workspace-relative, `/`-separated) → what it is: `f:<sha256>`, `l:<target>`, `o:<mode>`. */
export interface OwnerSnapshot {
  entries: Map<string, string>;
  /** False when the entry cap was reached before the walk ended. */
  complete: boolean;
}

/** Folders listed per snapshot (breadth first: the shallow ones always). */
const MAX_DIRS = 20_000;
/** Entries recorded beneath protected folders per snapshot. */
const MAX_ENTRIES = 50_000;
/** Largest file hashed whole; a bigger one is compared by size, inode and mtime. */
const MAX_HASH = 1024 * 1024;
/** Inside `.git`, the parts git reads commands or settings from (objects and refs are not). */
const GIT_PARTS = new Set(["config", "config.worktree", "hooks", "info", "modules", "commondir"]);

function signature(root: string, abs: string): string | undefined {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  if (!st) return undefined;
  if (st.isSymbolicLink()) {
    try {
      return `l:${readlinkSync(abs)}`;
    } catch {
      return "l:?";
    }
  }
  if (!st.isFile()) return st.isDirectory() ? undefined : `o:${st.mode}`;
  if (st.size > MAX_HASH) return `f:${st.size}:${st.ino}:${st.mtimeMs}`;
  // Read through a descriptor opened without following links at any step (a concurrent command
  // may have swapped a folder on the way for a link out of the workspace).
  const fd = openStrict(root, abs);
  if (fd === undefined) return "f:?";
  try {
    if (!fstatSync(fd).isFile()) return "f:?";
    const hash = createHash("sha256");
    const buf = Buffer.alloc(64 * 1024);
    for (let total = 0; total <= MAX_HASH;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      total += n;
    }
    return `f:${hash.digest("hex")}`;
  } catch {
    return "f:?";
  } finally {
    closeSync(fd);
  }
}

/**
 * Takes a snapshot of the protected paths under `root` (a real absolute path), not descending into
 * `skip` (the data dir when the workspace holds it: the quarantine lives there).
 */
export function snapshotOwnerFiles(root: string, skip: readonly string[] = []): OwnerSnapshot {
  const skipped = new Set(skip);
  const entries = new Map<string, string>();
  let seen = 0;
  let complete = true;
  const record = (abs: string): void => {
    const sig = signature(root, abs);
    if (sig !== undefined) entries.set(relative(root, abs), sig);
  };
  /** Everything beneath a protected folder (all of it: each of those files is read by a tool). */
  const recordTree = (dir: string, gitDir: boolean): void => {
    let list;
    try {
      list = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of list) {
      if (++seen > MAX_ENTRIES) {
        complete = false;
        return;
      }
      if (gitDir && !GIT_PARTS.has(e.name.toLowerCase())) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) recordTree(p, false);
      else record(p);
    }
  };
  const queue: [string, number][] = [[root, 0]];
  for (let i = 0; i < queue.length; i++) {
    if (i >= MAX_DIRS) {
      complete = false;
      break;
    }
    const [dir, depth] = queue[i] as [string, number];
    let list;
    try {
      list = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    // Every name of a folder that is looked at is checked: a flood of files in one folder costs
    // time, it does not hide the planted name among them.
    for (const e of list) {
      const p = join(dir, e.name);
      const name = e.name.toLowerCase();
      if (DIRS.has(name) || FILES.has(name)) {
        if (e.isDirectory()) recordTree(p, name === ".git");
        else record(p);
      } else if (e.isDirectory() && depth < 3 && !SKIP.has(name) && !skipped.has(p))
        queue.push([p, depth + 1]);
    }
  }
  return { entries, complete };
}

/** Paths new in `after` or changed since `before`, sorted. */
export function plantedPaths(before: OwnerSnapshot, after: OwnerSnapshot): string[] {
  const out: string[] = [];
  for (const [p, sig] of after.entries) if (before.entries.get(p) !== sig) out.push(p);
  return out.sort();
}

/**
 * The paths in words for the owner: a folder with more than two of them is named once with a count
 * (`.git/hooks/ (13 files)`), so `git init` is one short line.
 */
export function describePaths(paths: readonly string[], max = 8): string {
  const byDir = new Map<string, string[]>();
  for (const p of paths) {
    const i = p.lastIndexOf("/");
    const dir = i < 0 ? "" : p.slice(0, i);
    byDir.set(dir, [...(byDir.get(dir) ?? []), p]);
  }
  const parts: string[] = [];
  for (const [dir, files] of byDir) {
    if (files.length > 2 && dir) parts.push(`${dir}/ (${files.length} files)`);
    else parts.push(...files);
  }
  const shown = parts.slice(0, max);
  return shown.join(", ") + (parts.length > max ? ` and ${parts.length - max} more` : "");
}
