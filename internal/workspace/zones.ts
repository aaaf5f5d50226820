/**
 * The workspace's two zones (docs/security.md, "Zones"):
 *
 * - the DESK, `<workspace>/desk/`: the one place a sandboxed command or a CLI engine can write, and
 *   the working directory of every command. Nothing on it is trusted; what is not plain data is held
 *   after each command (workspace/desk-rules.ts).
 * - the MIND: the prompt files, `MEMORY.md` and `memory/`, `skills/`, `agents/`, templates and
 *   prompts, and the media `inbox/`. Only the daemon writes it, through its own tools (each a sink
 *   while the session is tainted), and the owner edits it directly.
 *
 * INVARIANT: inside the sandbox the whole workspace is read-only except the desk, so no command can
 * change the mind or plant a file beside it that the owner's programs would take up. Everything
 * else in the workspace (the owner's own files) is read-only to commands too; the model's file tools
 * write the desk and, as sinks, the mind, and nothing else.
 */
import { lstatSync, mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";

/** The desk folder's name under the workspace. */
export const DESK = "desk";

/** Files of the mind at the workspace root (compared case-insensitively). */
export const MIND_FILES: readonly string[] = [
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "USER.md",
  "TOOLS.md",
  "MEMORY.md",
  "HEARTBEAT.md",
  "BOOTSTRAP.md",
];
/** Folders of the mind at the workspace root (`inbox` is written by the daemon alone). */
export const MIND_DIRS: readonly string[] = ["memory", "skills", "agents", "templates", "prompts", "inbox"];

const mindFiles = new Set(MIND_FILES.map((f) => f.toLowerCase()));
const mindDirs = new Set(MIND_DIRS);

/** Which zone a workspace-relative path is in (`other`: the owner's own files, read-only to commands). */
export type Zone = "desk" | "mind" | "other";

/** The zone of a workspace-relative path (`/` or `\` separated; `.` parts ignored). */
export function zoneOf(rel: string): Zone {
  const parts = rel.split(/[\\/]+/).filter((p) => p && p !== ".");
  const first = (parts[0] ?? "").toLowerCase();
  if (first === DESK) return "desk";
  if (parts.length === 1 && mindFiles.has(first)) return "mind";
  if (mindDirs.has(first)) return "mind";
  return "other";
}

/** The desk of a workspace. */
export function deskOf(workspace: string): string {
  return join(workspace, DESK);
}

/** What {@link ensureDesk} did. */
export interface DeskSetup {
  desk: string;
  created: boolean;
  /** Where a non-folder found at the desk's name was moved (a link planted by an older release). */
  movedAside?: string;
}

/**
 * Makes sure `<workspace>/desk` is a real folder (0700), creating it when missing. Something else at
 * that name (a symlink to the owner's home, a file) is renamed aside, never followed or deleted.
 */
export function ensureDesk(workspace: string, now: () => Date = () => new Date()): DeskSetup {
  const desk = deskOf(workspace);
  const st = lstatSync(desk, { throwIfNoEntry: false });
  if (st?.isDirectory()) return { desk, created: false };
  let movedAside: string | undefined;
  if (st) {
    movedAside = `${desk}.moved-${now().toISOString().replace(/[:.]/g, "-")}`;
    renameSync(desk, movedAside);
  }
  // Recursive: a workspace that does not exist yet is made with it, owner-only.
  mkdirSync(desk, { recursive: true, mode: 0o700 });
  return { desk, created: true, ...(movedAside ? { movedAside } : {}) };
}
