/**
 * Which files the owner's CLI may take its orders from (issue 43, point 4; docs/security.md, "Files
 * the CLI trusts"). A `config.yaml` names the addresses the CLI sends the gateway token and provider
 * keys to, and a daemon card (`<data_dir>/gateway.json`) names the address and the token file: whoever
 * can write either can make the owner's `familiar status` or `familiar doctor` send a secret to them.
 *
 * Invariant: the CLI reads a config or card only when it is
 * - owned by the CLI's user (or by root, who can change everything anyway),
 * - writable by nobody else (no other write bit; no group write bit unless the group is the user's
 *   own primary group, as under user private groups), and
 * - not at or under a workspace root: the assistant writes there (a sandboxed command, a file tool).
 * A workspace root is a directory holding {@link WORKSPACE_MARKER} (the daemon writes it at start) or
 * one the owner's registry remembers (gateway/daemon-registry.ts), so a marker the model removed
 * does not unprotect it. A planted marker can only make the CLI refuse more, never trust more.
 */
import { existsSync, lstatSync, realpathSync, statSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { knownWorkspaces } from "./daemon-registry.js";

/** The file the daemon leaves at each workspace root, so the CLI knows the ground it must not trust. */
export const WORKSPACE_MARKER = ".familiar-workspace";

/** The marker's text: what it is for, for an owner who finds it. */
export const WORKSPACE_MARKER_TEXT =
  "This folder is a Familiar workspace: the assistant writes here, so the familiar CLI never reads a\n" +
  "config.yaml or daemon card from it (docs/security.md, 'Files the CLI trusts'). Written at each start.\n";

/** A config file or daemon card the CLI refuses to read. Its message is one line naming the file. */
export class UntrustedFileError extends Error {
  readonly code = "UNTRUSTED_OWNER_FILE";
  constructor(
    readonly file: string,
    readonly reason: string,
    hint: string,
  ) {
    super(`not reading ${file}: ${reason}; ${hint}`);
    this.name = "UntrustedFileError";
  }
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, "0")}`;
}

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** The workspace root `dir` lies at or under, found by walking up to `/` or from the registry. */
export function workspaceRootOf(dir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const start = resolve(dir);
  for (let d = start; ; d = dirname(d)) {
    if (existsSync(join(d, WORKSPACE_MARKER))) return d;
    if (dirname(d) === d) break;
  }
  for (const ws of knownWorkspaces(env)) {
    let real = ws;
    try {
      real = realpathSync(ws);
    } catch {
      /* a workspace since removed still counts by its recorded path */
    }
    if (within(start, ws) || within(start, real)) return ws;
  }
  return undefined;
}

/** Why `file` must not be trusted, or undefined when it may be. A missing file is not refused here. */
export function distrustReason(file: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const abs = resolve(file);
  let st;
  try {
    lstatSync(abs);
    st = statSync(abs);
  } catch {
    return undefined;
  }
  // Both where it was found and where a symlink leads: either place in a workspace is the model's.
  let real = abs;
  try {
    real = realpathSync(abs);
  } catch {
    /* statSync succeeded, so this is a race; judge by the path given */
  }
  for (const p of new Set([abs, real])) {
    const ws = workspaceRootOf(dirname(p), env);
    if (ws) return `it is inside the workspace ${ws} (the assistant can write there)`;
  }
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  if (uid !== undefined && st.uid !== uid && st.uid !== 0)
    return `it is owned by uid ${st.uid}, not by you (uid ${uid})`;
  // Group write counts as "others" unless the group is the user's own primary group: a clone made
  // under umask 002 with user private groups (Debian, Ubuntu, Fedora) is 0664 and still only theirs.
  const gid = typeof process.getgid === "function" ? process.getgid() : undefined;
  if ((st.mode & 0o002) !== 0 || ((st.mode & 0o020) !== 0 && st.gid !== gid))
    return `others can write it (mode ${octal(st.mode)})`;
  return undefined;
}

/** Throws {@link UntrustedFileError} when `file` exists and may not be trusted. */
export function assertOwnerFile(file: string, hint: string, env: NodeJS.ProcessEnv = process.env): void {
  const reason = distrustReason(file, env);
  if (reason) throw new UntrustedFileError(resolve(file), reason, hint);
}
