/**
 * The workspace of a backup being restored, sorted by the desk's rules (workspace/desk-rules.ts).
 *
 * A backup's workspace may have been written by someone else, or assembled by hand: a `.envrc`, a
 * `.git` with an `fsmonitor`, a `.vscode/tasks.json`, a script, or another assistant's
 * `CLAUDE.md` / `GEMINI.md` planted on the desk or beside the mind would be taken up by the owner's
 * programs. So every file that lands on the desk or anywhere in the workspace outside the mind
 * (workspace/zones.ts) is judged as the desk judges a command's output: plain data passes, anything
 * the desk would hold is left out with a report line (`held`, key `file:<path>`) unless the owner
 * accepts it, exactly as an imported skill's files are. The mind (prompt files, notes, skills,
 * agents...) is the daemon's and the owner's own and comes back as it was.
 *
 * Invariant: {@link planBackupWorkspace} only reads (a `--check` writes nothing); the copy writes
 * exactly the files it did not hold, each read and written through the workspace door.
 */
import { mkdirSync } from "node:fs";
import { BackupError } from "../store/backup.js";
import { CATEGORY_WHY, holdReason } from "../workspace/desk-rules.js";
import {
  listWorkspaceDirSync,
  readWorkspaceBytesSync,
  writeWorkspaceFileSync,
} from "../workspace/workspace-door.js";
import { DESK, zoneOf } from "../workspace/zones.js";
import type { Consent } from "./consent.js";

/** Largest workspace file a restore copies (media included). */
const MAX_RESTORE_FILE = 1024 * 1024 * 1024;

/** A workspace file the desk would hold: left out unless its key was accepted. */
export interface HeldFile {
  /** Workspace-relative path. */
  path: string;
  key: string;
  why: string;
  status: "held" | "accepted";
}

/** Why the desk would hold the workspace file `rel` (outside the mind), or undefined. */
export function restoreHoldReason(rel: string): string | undefined {
  const zone = zoneOf(rel);
  if (zone === "mind") return undefined;
  const inDesk = zone === "desk" ? rel.slice(DESK.length + 1) : rel;
  const c = holdReason({ rel: inDesk, kind: "file", mode: 0o600 });
  return c ? `${c}: ${CATEGORY_WHY[c]}` : undefined;
}

/** Every regular file of `<backupDir>/workspace`, workspace-relative; a link or special file refuses. */
function workspaceFiles(backupDir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of listWorkspaceDirSync(backupDir, rel)) {
      const p = `${rel}/${e.name}`;
      if (e.kind === "dir") walk(p);
      else if (e.kind !== "file")
        throw new BackupError("BACKUP_UNSAFE", `${p} in ${backupDir} is a ${e.kind}, not a file: refused`);
      else out.push(p.slice("workspace/".length));
    }
  };
  walk("workspace");
  return out;
}

/** The files of the backup's workspace the desk would hold, decided (read only). */
export function planBackupWorkspace(backupDir: string, consent: Consent): HeldFile[] {
  const held: HeldFile[] = [];
  for (const path of workspaceFiles(backupDir)) {
    const why = restoreHoldReason(path);
    if (!why) continue;
    const key = `file:${path}`;
    held.push({ path, key, why, status: consent.accepts(key) ? "accepted" : "held" });
  }
  return held;
}

/**
 * Copies `<backup>/workspace` into the new workspace through the door, leaving out the `held` paths.
 */
export function copyBackupWorkspace(backupDir: string, workspace: string, held: readonly HeldFile[]): void {
  mkdirSync(workspace, { recursive: true, mode: 0o700 });
  const out = new Set(held.filter((h) => h.status === "held").map((h) => h.path));
  for (const path of workspaceFiles(backupDir)) {
    // Judged again here, not only by the plan: a file added since the check is held all the same.
    if (out.has(path) || (restoreHoldReason(path) && !held.some((h) => h.path === path))) continue;
    const b = readWorkspaceBytesSync(backupDir, `workspace/${path}`, { maxBytes: MAX_RESTORE_FILE });
    if (b) writeWorkspaceFileSync(workspace, path, b.data);
  }
}
