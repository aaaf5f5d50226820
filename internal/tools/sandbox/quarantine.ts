/**
 * Moving planted files out of the workspace into `<data_dir>/quarantine/<id>/` (owner-only, out of
 * the sandbox's sight), and back when the owner keeps them.
 *
 * Invariant: every workspace path is reached through a descriptor of its parent folder opened
 * without following a link at any step (pinned-fds.ts), and the last step is a rename, which never
 * follows a link either: a command racing alongside cannot turn "move `.envrc` away" into "move the
 * owner's `~/.ssh` into the workspace" or "put the quarantined file back into `~/.config`".
 */
import {
  closeSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  constants,
  openSync,
} from "node:fs";
import { dirname, join } from "node:path";

/** A set of paths held in quarantine. */
export interface Quarantined {
  /** The quarantine folder (under the data dir). */
  dir: string;
  /** The workspace-relative paths moved there. */
  moved: string[];
  /** Paths that could not be moved (gone, or no longer reachable without a link). */
  failed: string[];
}

/** A descriptor of `rel`'s parent folder under `root`, created as needed, never through a link. */
function parentFd(root: string, rel: string, create: boolean): number | undefined {
  const parts = dirname(rel)
    .split("/")
    .filter((p) => p && p !== ".");
  let fd: number;
  try {
    fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    return undefined;
  }
  for (const part of parts) {
    const path = `/proc/self/fd/${fd}/${part}`;
    try {
      if (create && !lstatSync(path, { throwIfNoEntry: false })) mkdirSync(path, { mode: 0o755 });
      const next = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
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

/** Moves `from` to `to`; across file systems copies a file or link and removes the original. */
function move(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
    const st = lstatSync(from);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
    else if (st.isFile()) copyFileSync(from, to, constants.COPYFILE_EXCL);
    else throw err;
    unlinkSync(from);
  }
}

/** Moves `paths` (workspace-relative) from `root` into a new folder under `quarantineRoot`. */
export function quarantine(root: string, paths: readonly string[], quarantineRoot: string): Quarantined {
  mkdirSync(quarantineRoot, { recursive: true, mode: 0o700 });
  const dir = mkdtempSync(join(quarantineRoot, `${new Date().toISOString().replace(/[:.]/g, "-")}-`));
  const out: Quarantined = { dir, moved: [], failed: [] };
  for (const rel of paths) {
    const fd = parentFd(root, rel, false);
    if (fd === undefined) {
      out.failed.push(rel);
      continue;
    }
    try {
      mkdirSync(join(dir, dirname(rel)), { recursive: true, mode: 0o700 });
      move(`/proc/self/fd/${fd}/${base(rel)}`, join(dir, rel));
      out.moved.push(rel);
    } catch {
      out.failed.push(rel);
    } finally {
      closeSync(fd);
    }
  }
  return out;
}

/**
 * Puts quarantined paths back (the owner kept them). A path that exists again in the meantime is
 * not overwritten: it is listed in `failed` and stays in quarantine.
 */
export function restore(root: string, q: Quarantined): { restored: string[]; failed: string[] } {
  const restored: string[] = [];
  const failed: string[] = [];
  for (const rel of q.moved) {
    const fd = parentFd(root, rel, true);
    if (fd === undefined) {
      failed.push(rel);
      continue;
    }
    const target = `/proc/self/fd/${fd}/${base(rel)}`;
    try {
      if (lstatSync(target, { throwIfNoEntry: false })) throw new Error("exists");
      move(join(q.dir, rel), target);
      restored.push(rel);
    } catch {
      failed.push(rel);
    } finally {
      closeSync(fd);
    }
  }
  if (failed.length === 0) drop(q);
  return { restored, failed };
}

/** Deletes the quarantine folder (the owner said no). */
export function drop(q: Quarantined): void {
  rmSync(q.dir, { recursive: true, force: true });
}
