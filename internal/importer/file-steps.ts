/**
 * How each planned file lands in Familiar's workspace, decided by the import manifest: new, unchanged,
 * updated (we wrote it and the owner has not touched it, or it is the shipped template), kept (the
 * owner edited it since the last import), or written beside the owner's own file.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { packageRoot } from "../config/package-root.js";
import type { ItemStatus } from "./import-types.js";
import type { FileWrite } from "./plan-files.js";
import { sha256, type Target } from "./target.js";

export interface FileStep {
  write: FileWrite;
  status: ItemStatus;
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

/** How one file lands in the workspace, by the manifest's record of the last import. */
export function fileStep(t: Target, w: FileWrite): FileStep {
  const abs = join(t.workspace, w.rel);
  if (!existsSync(abs)) return { write: w, status: "new", rel: w.rel };
  const cur = sha256(readFileSync(abs));
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

/** Writes through a temporary file and a rename: a reader never sees half a file. */
export function writeAtomic(file: string, data: string | Buffer, mode?: number): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.import-${process.pid}.tmp`;
  writeFileSync(tmp, data, mode === undefined ? {} : { mode });
  if (mode !== undefined) chmodSync(tmp, mode);
  renameSync(tmp, file);
}
