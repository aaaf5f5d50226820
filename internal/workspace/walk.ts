/**
 * The walk beneath the workspace root that never follows a symlink, at any step.
 *
 * Invariant: the folder a name is finally opened in was reached from the root one component at a
 * time, each component opened with `O_NOFOLLOW` through `/proc/self/fd/<fd>/<name>` (the folder that
 * was opened, whatever happens to its path afterwards), so there is no check-then-use to race: a
 * component swapped for a link between the `lstat` and the `open` fails the open (`ELOOP`). The
 * root itself is the owner's choice (config.yaml) and may be a link; nothing below it may.
 *
 * Without /proc (not Linux) the walk uses plain paths: each component is `lstat`ed and the last one
 * opened with `O_NOFOLLOW`. That is racy against a concurrent swap, which is why Linux is the
 * supported platform for a sandboxed exec.
 */
import { closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readlinkSync } from "node:fs";
import { resolve } from "node:path";
import { WorkspaceError } from "./workspace-error.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
const PROC = existsSync("/proc/self/fd");

/** A folder reached by the walk: an open fd on Linux, a path elsewhere. `rel` is its workspace path. */
export interface WalkedDir {
  /** Path that names this folder for the kernel (`/proc/self/fd/N` or the absolute path). */
  readonly ref: string;
  readonly fd: number | undefined;
  readonly rel: string;
}

/** `dir/name` for the kernel: through the fd on Linux. */
export function childRef(dir: WalkedDir, name: string): string {
  return `${dir.ref}/${name}`;
}

/** `rel` joined for messages. */
export function joinRel(dir: WalkedDir, name: string): string {
  return dir.rel === "." ? name : `${dir.rel}/${name}`;
}

/**
 * The components of a daemon-chosen or model-supplied workspace-relative path. Absolute paths, `..`,
 * NUL bytes and empty names are refused: the daemon's own paths are always relative and plain.
 */
export function components(rel: string): string[] {
  if (rel.includes("\0")) throw new WorkspaceError("PATH_INVALID", "path contains a NUL byte");
  if (rel.startsWith("/") || /^[a-zA-Z]:[\\/]/.test(rel))
    throw new WorkspaceError(
      "PATH_OUTSIDE_WORKSPACE",
      `path "${rel}" is absolute; expected a workspace path`,
    );
  const parts = rel.split(/[\\/]+/).filter((c) => c !== "" && c !== ".");
  if (parts.includes(".."))
    throw new WorkspaceError("PATH_OUTSIDE_WORKSPACE", `path "${rel}" uses "..", which is not allowed`);
  return parts;
}

/** The error for a symlink met at `rel` (its target read, never followed). */
export function linkRefused(ref: string, rel: string): WorkspaceError {
  let target = "?";
  try {
    target = readlinkSync(ref);
  } catch {
    /* gone meanwhile: still a refusal */
  }
  return new WorkspaceError(
    "PATH_SYMLINK_REFUSED",
    `"${rel}" is a symbolic link (to ${target}); the daemon does not follow links in the workspace`,
    { path: rel, target },
  );
}

/** `lstat` of a name in a walked folder; undefined when it does not exist. */
export function lstatIn(dir: WalkedDir, name: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(childRef(dir, name));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ENOTDIR") throw new WorkspaceError("NOT_A_DIR", `"${dir.rel}" is not a folder`);
    throw err;
  }
}

/** Opens the workspace root. The caller closes the result with {@link closeDirs}. */
function openRoot(root: string): WalkedDir {
  const abs = resolve(root);
  if (!PROC) return { ref: abs, fd: undefined, rel: "." };
  let fd: number;
  try {
    fd = openSync(abs, O_RDONLY | O_DIRECTORY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new WorkspaceError("FILE_NOT_FOUND", `the workspace ${abs} does not exist`);
    throw err;
  }
  return { ref: `/proc/self/fd/${fd}`, fd, rel: "." };
}

/** Closes the folders a walk opened. */
export function closeDirs(dirs: readonly WalkedDir[]): void {
  for (const d of dirs) if (d.fd !== undefined) closeSync(d.fd);
}

/**
 * Walks to the folder that holds the last component of `rel`. Every folder on the way must be a real
 * folder (a link is refused with {@link linkRefused}); a missing one is created (mode 0700) when
 * `mkdirs`, else the walk ends with `undefined` (nothing there). Returns the open folders (the last is
 * the parent; close them all with {@link closeDirs}) and the last name.
 */
export function walkToParent(
  root: string,
  rel: string,
  mkdirs: boolean,
): { dirs: WalkedDir[]; name: string } | undefined {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) throw new WorkspaceError("FILE_IS_DIR", `"${rel}" names the workspace itself`);
  const dirs = [openRoot(root)];
  try {
    for (const part of parts) {
      const dir = dirs[dirs.length - 1] as WalkedDir;
      const here = joinRel(dir, part);
      let st = lstatIn(dir, part);
      if (st?.isSymbolicLink()) throw linkRefused(childRef(dir, part), here);
      if (!st) {
        if (!mkdirs) {
          closeDirs(dirs);
          return undefined;
        }
        try {
          mkdirSync(childRef(dir, part), { mode: 0o700 });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        }
        st = lstatIn(dir, part);
        if (st?.isSymbolicLink()) throw linkRefused(childRef(dir, part), here);
      }
      if (!st?.isDirectory()) throw new WorkspaceError("NOT_A_DIR", `"${here}" is not a folder`);
      dirs.push(openDirIn(dir, part, here));
    }
    return { dirs, name };
  } catch (err) {
    closeDirs(dirs);
    throw err;
  }
}

/** Opens a sub-folder without following a link (a swap since the lstat fails with ELOOP). */
export function openDirIn(dir: WalkedDir, name: string, rel: string): WalkedDir {
  if (dir.fd === undefined) return { ref: childRef(dir, name), fd: undefined, rel };
  try {
    const fd = openSync(childRef(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    return { ref: `/proc/self/fd/${fd}`, fd, rel };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw linkRefused(childRef(dir, name), rel);
    if (code === "ENOTDIR") throw new WorkspaceError("NOT_A_DIR", `"${rel}" is not a folder`);
    if (code === "ENOENT") throw new WorkspaceError("FILE_NOT_FOUND", `"${rel}" does not exist`);
    throw err;
  }
}

/** Walks to a folder itself (for listing); undefined when it does not exist. Close with {@link closeDirs}. */
export function walkToDir(root: string, rel: string): WalkedDir[] | undefined {
  if (components(rel).length === 0) return [openRoot(root)];
  const w = walkToParent(root, rel, false);
  if (!w) return undefined;
  const parent = w.dirs[w.dirs.length - 1] as WalkedDir;
  try {
    const st = lstatIn(parent, w.name);
    const here = joinRel(parent, w.name);
    if (!st) {
      closeDirs(w.dirs);
      return undefined;
    }
    if (st.isSymbolicLink()) throw linkRefused(childRef(parent, w.name), here);
    if (!st.isDirectory()) throw new WorkspaceError("NOT_A_DIR", `"${here}" is not a folder`);
    w.dirs.push(openDirIn(parent, w.name, here));
    return w.dirs;
  } catch (err) {
    closeDirs(w.dirs);
    throw err;
  }
}
