/**
 * Opening a workspace path without following a symlink at any step (the `openat2(RESOLVE_BENEATH)`
 * idea, in Node): the walk holds a file descriptor of each folder and opens the next component
 * through `/proc/self/fd/<fd>/<name>` with `O_NOFOLLOW`. `/proc/self/fd/<fd>` is the folder that was
 * opened, whatever happens to its path afterwards, so a folder or file swapped for a symlink between
 * a check and the open cannot lead outside: there is no separate check to race.
 *
 * Symlinks inside the workspace still work: one met on the way is read (never followed by the kernel)
 * and its target walked the same way from the workspace root, component by component; a target that
 * leaves the workspace (absolute outside, or `..` above the root) is refused.
 *
 * Linux only (/proc). Elsewhere the caller falls back to real-path confinement plus `O_NOFOLLOW` on the
 * last component (see {@link beneathSupported}).
 */
import { constants, existsSync } from "node:fs";
import { lstat, mkdir, open, readlink, realpath, type FileHandle } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { ToolError } from "./tool.js";
import { resolveInWorkspace } from "./workspace-path.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
/** Symlinks followed on one path before giving up (the kernel's limit). */
const MAX_LINKS = 40;

/** True where the fd-relative walk works (Linux with /proc mounted). */
export function beneathSupported(): boolean {
  return existsSync("/proc/self/fd");
}

const fdPath = (dir: FileHandle, name: string): string => `/proc/self/fd/${dir.fd}/${name}`;

function outside(input: string, why: string): ToolError {
  return new ToolError("PATH_OUTSIDE_WORKSPACE", `path "${input}" ${why}`);
}

/** What to open at the end of the walk. */
export interface OpenBeneathOptions {
  /**
   * `r` read, `rw` read and write (edit), `w` write (create; the caller truncates after its checks),
   * `a` append (create), `d` a folder.
   */
  mode: "r" | "rw" | "w" | "a" | "d";
  /** Create missing parent folders (write_file). */
  mkdirs?: boolean;
  /**
   * Called with the workspace-relative path about to be opened (symlinks resolved), before it is
   * opened; may throw (or ask the owner). The folder is held open, so the name cannot move elsewhere.
   */
  beforeOpen?: (rel: string) => Promise<void>;
}

const { O_WRONLY, O_RDWR, O_CREAT, O_APPEND } = constants;
const FLAGS: Record<OpenBeneathOptions["mode"], number> = {
  r: O_RDONLY | O_NONBLOCK,
  rw: O_RDWR | O_NONBLOCK,
  w: O_WRONLY | O_CREAT | O_NONBLOCK,
  a: O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK,
  d: O_RDONLY | O_DIRECTORY,
};

/** The components of a model-supplied path, relative to the workspace root. */
async function components(root: string, input: string): Promise<string[]> {
  if (input.includes("\0")) throw new ToolError("PATH_INVALID", "path contains a NUL byte");
  if (input.split(/[\\/]+/).includes("..")) throw outside(input, 'uses "..", which is not allowed');
  let rel = input;
  if (isAbsolute(input)) {
    const abs = resolve(input);
    const viaReal = relative(root, abs);
    const given = relative(await realpath(root).catch(() => root), abs);
    const r = [viaReal, given].find((x) => !x.startsWith("..") && !isAbsolute(x));
    if (r === undefined) throw outside(input, "is outside the workspace");
    rel = r;
  }
  return rel.split(/[\\/]+/).filter((c) => c && c !== ".");
}

/**
 * Opens `input` beneath `workspace` without following symlinks out of it. Returns the open handle
 * (the caller closes it) and the path relative to the workspace root that was actually opened.
 */
export async function openBeneath(
  workspace: string,
  input: string,
  opts: OpenBeneathOptions,
): Promise<{ handle: FileHandle; rel: string }> {
  const root = resolve(workspace);
  if (!beneathSupported()) return openResolved(root, input, opts);
  const queue = await components(root, input);
  const stack: FileHandle[] = [await open(root, O_RDONLY | O_DIRECTORY)];
  const names: string[] = [];
  let links = 0;
  try {
    for (;;) {
      const dir = stack[stack.length - 1] as FileHandle;
      const name = queue.shift();
      if (name === undefined) {
        // The path named the root (or a folder reached through a link): hand over that folder.
        if (opts.mode !== "d") throw new ToolError("FILE_IS_DIR", `"${input}" is a directory`);
        await opts.beforeOpen?.(names.join("/") || ".");
        stack.pop();
        return { handle: dir, rel: names.join("/") || "." };
      }
      if (name === "..") {
        // Only symlink targets bring `..` here; above the root is outside.
        if (stack.length === 1) throw outside(input, "resolves outside the workspace (through a symlink)");
        await (stack.pop() as FileHandle).close();
        names.pop();
        continue;
      }
      const last = queue.length === 0;
      const st = await lstat(fdPath(dir, name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return undefined;
        throw err;
      });
      if (st?.isSymbolicLink()) {
        if (++links > MAX_LINKS)
          throw new ToolError("PATH_SYMLINK_LOOP", `too many levels of symbolic links in "${input}"`);
        const target = await readlink(fdPath(dir, name));
        if (isAbsolute(target)) {
          const real = await realpath(root).catch(() => root);
          const rel = [relative(real, target), relative(root, target)].find(
            (r) => r === "" || (!r.startsWith(".." + sep) && r !== ".." && !isAbsolute(r)),
          );
          if (rel === undefined) throw outside(input, "resolves outside the workspace (through a symlink)");
          while (stack.length > 1) await (stack.pop() as FileHandle).close();
          names.length = 0;
          queue.unshift(...rel.split(sep).filter((c) => c && c !== "."));
        } else queue.unshift(...target.split("/").filter((c) => c && c !== "."));
        continue;
      }
      names.push(name);
      if (!last) {
        if (!st) {
          if (!opts.mkdirs)
            throw new ToolError(
              "FILE_NOT_FOUND",
              `"${input}" does not exist (no folder "${names.join("/")}")`,
            );
          await mkdir(fdPath(dir, name)).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== "EEXIST") throw err;
          });
        }
        stack.push(await openNoFollow(dir, name, O_RDONLY | O_DIRECTORY, input));
        continue;
      }
      await opts.beforeOpen?.(names.join("/"));
      const handle = await openNoFollow(dir, name, FLAGS[opts.mode], input);
      return { handle, rel: names.join("/") };
    }
  } finally {
    for (const h of stack) await h.close().catch(() => undefined);
  }
}

/** Opens one component with O_NOFOLLOW; a symlink swapped in since the lstat is refused (ELOOP). */
async function openNoFollow(
  dir: FileHandle,
  name: string,
  flags: number,
  input: string,
): Promise<FileHandle> {
  try {
    return await open(fdPath(dir, name), flags | O_NOFOLLOW, 0o644);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP")
      throw new ToolError(
        "PATH_SYMLINK_SWAPPED",
        `"${input}" changed into a symlink while being opened; refused`,
      );
    if (code === "ENOTDIR")
      throw new ToolError("NOT_A_DIR", `"${input}": a part of the path is not a folder`);
    if (code === "ENOENT") throw new ToolError("FILE_NOT_FOUND", `file "${input}" does not exist`);
    if (code === "EISDIR") throw new ToolError("FILE_IS_DIR", `"${input}" is a directory`);
    if (code === "ENXIO") throw new ToolError("FILE_NOT_REGULAR", `"${input}" is not a regular file`);
    throw err;
  }
}

/** Without /proc: real-path confinement, then `O_NOFOLLOW` on the last component. */
async function openResolved(
  root: string,
  input: string,
  opts: OpenBeneathOptions,
): Promise<{ handle: FileHandle; rel: string }> {
  const real = await resolveInWorkspace(root, input);
  const rel = relative(await realpath(root).catch(() => root), real) || ".";
  if (opts.mkdirs) await mkdir(dirname(real), { recursive: true });
  await opts.beforeOpen?.(rel);
  try {
    return { handle: await open(real, FLAGS[opts.mode] | O_NOFOLLOW, 0o644), rel };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new ToolError("FILE_NOT_FOUND", `file "${input}" does not exist`);
    throw err;
  }
}
