/**
 * Does an allow-listed exec command reach outside the workspace through a symlink? The allow list
 * covers the workspace only (exec-policy.ts rejects absolute paths, `~` and `..` by their text); this
 * looks at the file system: argument paths, what globs and braces expand to, and, for commands told
 * to follow symlinks while recursing (`grep -R`, `ls -LR`), every symlink under the workspace.
 * A `true` means the owner is asked; a false positive costs one question, never a leak.
 */
import { readdir, realpath } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { argumentWords, splitCommand } from "./exec-policy.js";
import { ToolError } from "./tool.js";
import { resolveInWorkspace } from "./workspace-path.js";

/**
 * Characters the shell expands a word on: globs, and braces (`{link,x}/secret`: dash does not expand
 * braces, but bash does, also as `sh`).
 */
const GLOB_CHARS = /[*?[{]/;
/** Paths a glob may expand to before the command is asked about instead of checked path by path. */
const MAX_GLOB_MATCHES = 2000;

/**
 * The paths (relative to `root`) the shell would expand `word` to: segment by segment, through
 * symlinked folders (as `readdir` follows them), without dot files unless the pattern starts with a
 * dot. undefined when there are more than MAX_GLOB_MATCHES.
 */
async function expandGlob(root: string, word: string): Promise<string[] | undefined> {
  // Loaded only when a command has a glob: most turns never pay for it.
  const { default: picomatch } = await import("picomatch");
  let paths = [""];
  for (const seg of word.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (!GLOB_CHARS.test(seg)) {
      paths = paths.map((p) => (p ? `${p}/${seg}` : seg));
      continue;
    }
    const isMatch = picomatch(seg, { dot: seg.startsWith(".") });
    const next: string[] = [];
    for (const base of paths) {
      const entries = await readdir(resolve(root, base || ".")).catch(() => [] as string[]);
      for (const e of entries) if (isMatch(e)) next.push(base ? `${base}/${e}` : e);
      if (next.length > MAX_GLOB_MATCHES) return undefined;
    }
    paths = next;
  }
  return paths;
}

/**
 * True when an argument word names an existing path that resolves outside `root` (symlinks followed).
 * A glob word (`cat *`, `cat link/*`) is expanded as the shell would and every match is checked; one
 * with too many matches counts as an escape (the owner is asked).
 */
export async function escapesBySymlink(command: string, root: string): Promise<boolean> {
  const outside = async (w: string): Promise<boolean> => {
    try {
      await resolveInWorkspace(root, w);
      return false;
    } catch (err) {
      return err instanceof ToolError && err.code === "PATH_OUTSIDE_WORKSPACE";
    }
  };
  for (const w of argumentWords(command)) {
    if (!w || w.startsWith("-")) continue;
    // A brace holding a slash (`{link/secret,x}`) expands across folders: not checked segment by
    // segment, so the owner is asked.
    if (/\{[^}]*\//.test(w)) return true;
    const candidates = GLOB_CHARS.test(w) ? await expandGlob(root, w) : [w];
    if (!candidates) return true;
    for (const c of candidates) if (await outside(c)) return true;
  }
  if (followsLinksRecursively(command)) return hasEscapingLink(root);
  return false;
}

/**
 * True when a segment asks to follow symlinks while recursing: a short-flag cluster with `R` on grep
 * (its -R dereferences; -r does not), or a dereferencing flag (`-L`, `--dereference`,
 * `--dereference-recursive`, `--follow`) anywhere.
 */
export function followsLinksRecursively(command: string): boolean {
  return splitCommand(command).segments.some((seg) => {
    const words = seg.replace(/["']/g, "").trim().split(/\s+/);
    const grep = /(^|\/)[ef]?grep$/.test(words[0] ?? "");
    return words
      .slice(1)
      .some(
        (w) =>
          ["--dereference", "--dereference-recursive", "--follow"].includes(w) ||
          (/^-[A-Za-z]+$/.test(w) && (w.includes("L") || (grep && w.includes("R")))),
      );
  });
}

/** Entries looked at before the walk gives up (and the owner is asked). */
const MAX_WALK_ENTRIES = 20_000;

/** True when a symlink somewhere under `root` resolves outside it (or the tree is too big to tell). */
async function hasEscapingLink(root: string): Promise<boolean> {
  const base = await realpath(root).catch(() => resolve(root));
  const queue = [base];
  let seen = 0;
  for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (++seen > MAX_WALK_ENTRIES) return true;
      const p = join(dir, e.name);
      if (e.isSymbolicLink()) {
        const target = await realpath(p).catch(() => undefined);
        // A dangling link reaches nothing; one that resolves must stay inside.
        if (target !== undefined && target !== base && !target.startsWith(base + sep)) return true;
      } else if (e.isDirectory()) queue.push(p);
    }
  }
  return false;
}
