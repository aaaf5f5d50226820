/**
 * How each planned file lands in Familiar's workspace, decided by the import manifest: new, unchanged,
 * updated (we wrote it and the owner has not touched it, or it is the shipped template), kept (the
 * owner edited it since the last import), or written beside the owner's own file.
 *
 * The workspace is written by the assistant's sandbox, so it is read and written only through the
 * daemon's door (internal/workspace/workspace-door.ts): no link is followed at any step. A planted
 * `SOUL.md -> ~/.ssh/id_ed25519` is neither read, copied aside nor written through; `memory` or
 * `skills` linked elsewhere get nothing. Such a file is reported (`cannot`) and left as it is.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { readWorkspaceBytesSync, writeWorkspaceFileSync } from "../workspace/workspace-door.js";
import { isWorkspaceError } from "../workspace/workspace-error.js";
import { packageRoot } from "../config/package-root.js";
import type { ItemStatus } from "./import-types.js";
import type { FileWrite } from "./plan-files.js";
import { sha256, type Target } from "./target.js";

export interface FileStep {
  write: FileWrite;
  status: ItemStatus;
  /** Why the step cannot be taken (status `cannot`): a link or a non-file in the workspace. */
  why?: string;
  /** The path actually written (a memory note may move aside). */
  rel: string;
  /** Keep the owner's previous file here first. */
  backup?: string;
}

/** sha256 of the shipped workspace template's file at `rel`, if there is one. */
function templateHash(rel: string): string | undefined {
  try {
    return sha256(readFileSync(join(packageRoot(), "workspace", rel)));
  } catch {
    return undefined;
  }
}

/** Largest workspace file an import compares (and keeps aside) before replacing it. */
const MAX_COMPARE_BYTES = 64 * 1024 * 1024;

/** How one file lands in the workspace, by the manifest's record of the last import. */
export function fileStep(t: Target, w: FileWrite): FileStep {
  let have: Buffer | undefined;
  try {
    have = readWorkspaceBytesSync(t.workspace, w.rel, { maxBytes: MAX_COMPARE_BYTES })?.data;
  } catch (err) {
    if (!isWorkspaceError(err)) throw err;
    // No workspace yet (a dry run into a new instance): every file is new.
    if (err.code === "FILE_NOT_FOUND") return { write: w, status: "new", rel: w.rel };
    return { write: w, status: "cannot", rel: w.rel, why: `${err.message}: left as it is` };
  }
  if (!have) return { write: w, status: "new", rel: w.rel };
  const cur = sha256(have);
  const want = sha256(w.data);
  const recorded = t.manifest.files[w.rel];
  if (cur === want) return { write: w, status: "unchanged", rel: w.rel };
  if (recorded === cur) return { write: w, status: "update", rel: w.rel };
  if (recorded !== undefined) return { write: w, status: "kept", rel: w.rel };
  // The shipped template file (what `familiar init` wrote) is simply replaced.
  if (cur === templateHash(w.rel)) return { write: w, status: "update", rel: w.rel };
  // A file of the owner's: a note moves aside, anything else is replaced with theirs kept beside it.
  if (w.altRel) {
    const alt = fileStep(t, { ...w, rel: w.altRel, altRel: undefined });
    return { ...alt, write: w };
  }
  return { write: w, status: "update", rel: w.rel, backup: `${w.rel}.pre-import` };
}

/**
 * Takes one step in the workspace through the door: the owner's previous file first kept aside (read
 * through the door too, so never a link's target), then the file itself (a link at its name is
 * removed, never written through).
 */
export function applyFileStep(workspace: string, s: FileStep): void {
  if (s.backup) {
    const prev = readWorkspaceBytesSync(workspace, s.rel, { maxBytes: MAX_COMPARE_BYTES });
    const kept = readWorkspaceBytesSync(workspace, s.backup, { maxBytes: MAX_COMPARE_BYTES });
    if (prev && !kept) writeWorkspaceFileSync(workspace, s.backup, prev.data);
  }
  writeWorkspaceFileSync(workspace, s.rel, s.write.data, { executable: s.write.mode === 0o700 });
}

/** Writes a file outside the workspace (config.yaml, the manifest) through a temporary file and a rename. */
export function writeAtomic(file: string, data: string | Buffer, mode?: number): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.import-${process.pid}.tmp`;
  writeFileSync(tmp, data, mode === undefined ? {} : { mode });
  if (mode !== undefined) chmodSync(tmp, mode);
  renameSync(tmp, file);
}
