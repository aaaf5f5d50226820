/**
 * The workspace folder exists before anything runs in it (issue 46 item 1): an unsandboxed `exec`
 * spawns its shell there and a CLI engine resolves it, so a `workspace:` that does not exist yet
 * failed every command (`spawn /bin/sh ENOENT`) and every claude-cli turn (`lstat '<workspace>'`).
 *
 * Invariants: a missing workspace is created, 0700 like every folder the daemon makes (and its
 * missing parents too); when it cannot be, start fails in one line naming the folder, why, and what
 * to do. Nothing existing is ever changed here (narrowModes tightens an existing folder's mode).
 */
import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Start cannot go on: the workspace is missing and cannot be made. */
export class WorkspaceDirError extends Error {
  readonly code = "WORKSPACE_UNUSABLE";
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(
      `workspace: ${path} cannot be used: ${reason}; create the folder yourself, or set workspace: ` +
        `in config.yaml to a folder the daemon's user can write`,
    );
    this.name = "WorkspaceDirError";
  }
}

/** What is at `p`: a folder, something else, or nothing. */
function kindOf(p: string): "dir" | "other" | "none" {
  try {
    return statSync(p).isDirectory() ? "dir" : "other";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return "none";
    // ENOTDIR: a file stands where a parent folder should be; the caller names it.
    return code === "ENOTDIR" ? "none" : "other";
  }
}

/**
 * Makes sure the workspace folder exists; returns true when it was created now.
 * @throws WorkspaceDirError naming the folder and the cause.
 */
export function ensureWorkspaceDir(workspace: string): boolean {
  const path = resolve(workspace);
  const kind = kindOf(path);
  if (kind === "dir") return false;
  if (kind === "other") throw new WorkspaceDirError(path, "something that is not a folder is in the way");
  // The nearest thing that exists above it: a file there blocks the way, a folder must be writable.
  let above = dirname(path);
  while (above !== dirname(above) && kindOf(above) === "none") above = dirname(above);
  if (kindOf(above) === "other")
    throw new WorkspaceDirError(path, `${above} is a file, not a folder, so no folder can be made in it`);
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why =
      e.code === "EACCES" || e.code === "EPERM"
        ? `it does not exist and ${above} is not writable by this user (${e.code})`
        : e.code === "EROFS"
          ? `it does not exist and ${above} is on a read-only file system`
          : `it does not exist and could not be created (${e.code ?? e.message})`;
    throw new WorkspaceDirError(path, why);
  }
  return true;
}
