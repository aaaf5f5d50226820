/**
 * The symlinks in the places of the workspace the daemon reads or writes itself, for `familiar
 * doctor`: the prompt files, HEARTBEAT.md, MEMORY.md and memory/, skills/, agents/, the media inbox.
 * The door refuses every one of them already; the owner should still see them, because a link there
 * was most likely planted by a sandboxed command (or is a mistake that silently drops a file).
 */
import { linkEntryRefusal, listWorkspaceDirSync } from "./workspace-door.js";
import { isWorkspaceError, type RefusedLink } from "./workspace-error.js";

/** Files directly in the workspace the daemon reads. */
export const DAEMON_FILES = [
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "USER.md",
  "TOOLS.md",
  "MEMORY.md",
  "memory.md",
  "HEARTBEAT.md",
] as const;

/** Folders the daemon reads or writes, and how deep below each it looks. */
const DAEMON_DIRS: { rel: string; depth: number }[] = [
  { rel: "memory", depth: 1 },
  { rel: "skills", depth: 2 },
  { rel: "agents", depth: 1 },
  { rel: "inbox", depth: 3 },
];

/** Every symlink in the daemon's places (what it points at is read, never followed). */
export function daemonPlaceLinks(root: string): RefusedLink[] {
  const out: RefusedLink[] = [];
  const note = (relDir: string, name: string): void => {
    const r = linkEntryRefusal(root, relDir, name);
    if (r.link) out.push(r.link);
  };
  let top;
  try {
    top = listWorkspaceDirSync(root, ".");
  } catch {
    return out;
  }
  const wantedTop = new Set<string>([...DAEMON_FILES, ...DAEMON_DIRS.map((d) => d.rel)]);
  for (const e of top) if (e.kind === "link" && wantedTop.has(e.name)) note(".", e.name);
  const walk = (rel: string, depth: number): void => {
    let entries;
    try {
      entries = listWorkspaceDirSync(root, rel);
    } catch (err) {
      if (isWorkspaceError(err)) return;
      throw err;
    }
    for (const e of entries) {
      if (e.kind === "link") note(rel, e.name);
      else if (e.kind === "dir" && depth > 1) walk(`${rel}/${e.name}`, depth - 1);
    }
  };
  for (const d of DAEMON_DIRS)
    if (top.some((e) => e.name === d.rel && e.kind === "dir")) walk(d.rel, d.depth);
  return out;
}
