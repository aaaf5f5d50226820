/**
 * Workspace confinement for the file tools.
 *
 * Invariant: a path is accepted only when its *real* location (symlinks resolved) is the workspace or
 * inside it. For a path that does not exist yet, the nearest existing ancestor is resolved instead, so
 * `link-to-etc/new-file` is refused even though `new-file` does not exist. `..` segments are refused
 * outright: the model never needs them and they are the classic escape.
 */
import { lstat, readlink, realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "./tool.js";

function inside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === "" || (!rel.startsWith(".." + sep) && rel !== ".." && !isAbsolute(rel));
}

/** Symlinks followed while resolving one path before giving up (as the kernel's ELOOP limit). */
const MAX_LINKS = 40;

/**
 * The real path of `p`, or for a path that does not exist, the real path of its nearest existing
 * ancestor joined with the rest. A dangling symlink on the way is followed to its target (which does
 * not exist yet): writing through `link -> /outside/new.txt` would create the target, so the target,
 * not the link's own location, is what must stay inside the workspace.
 */
async function realOrNearest(p: string, links = 0): Promise<string> {
  let cur = p;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await realpath(cur);
      return rest.length ? join(real, ...rest.reverse()) : real;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "ELOOP") throw err;
      const st = await lstat(cur).catch(() => undefined);
      if (st?.isSymbolicLink()) {
        if (code === "ELOOP" || links >= MAX_LINKS)
          throw new ToolError("PATH_SYMLINK_LOOP", `too many levels of symbolic links in "${p}"`);
        const target = resolve(dirname(cur), await readlink(cur));
        return realOrNearest(rest.length ? join(target, ...[...rest].reverse()) : target, links + 1);
      }
      if (code === "ELOOP") throw err;
      const parent = dirname(cur);
      if (parent === cur) return p;
      rest.push(cur.slice(parent.length).replace(/^[\\/]+/, ""));
      cur = parent;
    }
  }
}

/**
 * Resolves a model-supplied path inside the workspace and returns the real absolute path.
 * Throws ToolError `PATH_OUTSIDE_WORKSPACE` for traversal, outside absolute paths and escaping symlinks.
 */
export async function resolveInWorkspace(workspace: string, input: string): Promise<string> {
  if (input.includes("\0")) throw new ToolError("PATH_INVALID", "path contains a NUL byte");
  const parts = input.split(/[\\/]+/);
  if (parts.includes(".."))
    throw new ToolError("PATH_OUTSIDE_WORKSPACE", `path "${input}" uses "..", which is not allowed`);
  const root = await realpath(resolve(workspace)).catch(() => resolve(workspace));
  const abs = isAbsolute(input) ? resolve(input) : resolve(root, input);
  if (isAbsolute(input) && !inside(root, abs) && !inside(resolve(workspace), abs))
    throw new ToolError("PATH_OUTSIDE_WORKSPACE", `path "${input}" is outside the workspace`);
  // An absolute path given through the unresolved workspace path is re-rooted on the real one.
  const candidate = inside(root, abs) ? abs : join(root, relative(resolve(workspace), abs));
  const real = await realOrNearest(candidate);
  if (!inside(root, real))
    throw new ToolError(
      "PATH_OUTSIDE_WORKSPACE",
      `path "${input}" resolves outside the workspace (through a symlink)`,
    );
  return real;
}

/** The path relative to the workspace for messages (`.` for the root). */
export async function displayPath(workspace: string, real: string): Promise<string> {
  const root = await realpath(resolve(workspace)).catch(() => resolve(workspace));
  return relative(root, real) || ".";
}
