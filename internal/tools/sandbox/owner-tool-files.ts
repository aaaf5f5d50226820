/**
 * Files in the workspace that make the OWNER's own tools run code, outside any sandbox, on an
 * everyday action: `git status` runs `core.fsmonitor` from `.git/config` (and hooks, pagers, filters
 * named in `.gitattributes`); direnv runs `.envrc` on `cd`; VS Code runs `.vscode/tasks.json` tasks on
 * folder open; npm reads `script-shell` / `node-options` from `.npmrc` for every command; mise runs
 * hooks from `mise.toml` on `cd`; husky and pre-commit run scripts on commit; Mercurial runs hooks from
 * `.hg/hgrc`. The CLI engines load their project settings the same way: Claude Code runs hooks and MCP
 * servers from `.claude/settings.json`, `.mcp.json` and `.claude.json` and takes `CLAUDE.md` as
 * instructions; Cursor, Gemini CLI and Zed read MCP servers and tasks from their own folders.
 *
 * write_file / edit_file into them need the owner's approval even with the sandbox on, and inside the
 * sandbox the existing ones are bound read-only. `package.json` and `Makefile` are deliberately not on
 * the list: they run only when the owner runs that project's build, which runs its code by definition.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";

/** Folder names whose whole content is protected. */
export const DIRS = new Set([
  ".git",
  ".hg",
  ".vscode",
  ".idea",
  ".husky",
  ".mise",
  ".devcontainer",
  ".claude",
  ".cursor",
  ".gemini",
  ".zed",
]);
/** File names protected wherever they are. */
export const FILES = new Set([
  ".envrc",
  "claude.md",
  "claude.local.md",
  ".mcp.json",
  ".claude.json",
  "lefthook.yml",
  ".lefthook.yml",
  ".gitattributes",
  ".gitmodules",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".mise.toml",
  "mise.toml",
  ".pre-commit-config.yaml",
]);

/**
 * Why the owner must approve a write to `rel` (a workspace-relative path, `/` or `\` separated), or
 * undefined when it is an ordinary file. Names compare case-insensitively: on a case-insensitive file
 * system `.GIT/config` is `.git/config`.
 */
export function ownerToolFileReason(rel: string): string | undefined {
  const parts = rel
    .split(/[\\/]+/)
    .filter((p) => p && p !== ".")
    .map((p) => p.toLowerCase());
  const dir =
    parts.slice(0, -1).find((p) => DIRS.has(p)) ?? (DIRS.has(parts.at(-1) ?? "") ? parts.at(-1) : undefined);
  if (dir === ".git") return "files under .git/ (config, hooks) make the owner's own git run commands";
  if (dir === ".claude") return "files under .claude/ (settings, hooks) make the Claude CLI run commands";
  if (dir) return `files under ${dir}/ make the owner's own tools run commands`;
  const base = parts.at(-1) ?? "";
  if (FILES.has(base)) return `${base} makes the owner's own tools run commands`;
  return undefined;
}

/** Entries looked at while searching for protected files (a huge workspace is only partly covered). */
const MAX_SCAN = 5000;
/** Folders never descended into (big, and not where these files live). */
export const SKIP = new Set(["node_modules", ".cache", "target", "dist", "build", "venv", ".venv"]);

/** What findOwnerToolFiles found: folders to pin in place, and paths to bind read-only. */
export interface OwnerToolFiles {
  /**
   * Folders bound onto themselves (read-write) so they become mount points, which cannot be renamed
   * or removed: the folders between the workspace and each protected path, and each `.git`. Without
   * this, `mv proj proj.old && git init proj` would swap the owner's repository for a planted one.
   */
  pins: string[];
  /** The protected paths themselves, bound read-only. */
  readOnly: string[];
}

/**
 * The existing protected paths under `root` (absolute), to depth 3: inside the sandbox they are bound
 * read-only, so a command cannot plant a `core.fsmonitor` in the owner's repository either. For a
 * `.git` folder only the parts git reads commands from are listed (config, hooks, info, modules), so
 * `git commit` can still write objects and refs.
 */
export function findOwnerToolFiles(root: string): OwnerToolFiles {
  const readOnly: string[] = [];
  const pins = new Set<string>();
  let seen = 0;
  const walk = (dir: string, depth: number, ancestors: string[]): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (++seen > MAX_SCAN) return;
      const p = join(dir, e.name);
      const name = e.name.toLowerCase();
      if (e.isSymbolicLink()) continue;
      let found = true;
      if (e.isDirectory() && name === ".git") {
        pins.add(p);
        readOnly.push(join(p, "config"), join(p, "hooks"), join(p, "info"), join(p, "modules"));
      } else if (e.isDirectory() && DIRS.has(name)) readOnly.push(p);
      else if (FILES.has(name) || (e.isFile() && name === ".git")) readOnly.push(p);
      else {
        found = false;
        if (e.isDirectory() && depth < 3 && !SKIP.has(name)) walk(p, depth + 1, [...ancestors, p]);
      }
      if (found) for (const a of ancestors) pins.add(a);
    }
  };
  walk(root, 0, []);
  // Shallow first: a pin must be mounted before the binds beneath it.
  return { pins: [...pins].sort((a, b) => a.length - b.length), readOnly };
}
