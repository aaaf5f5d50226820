/**
 * Owner data is private on disk (docs/security.md, invariant 5): the data dir and the workspace are
 * 0700, the database with its `-wal` and `-shm`, the token file, every other file directly in the data
 * dir and config.yaml are 0600. Another local user must not read the chat history from `familiar.db`.
 *
 * - {@link privateUmask} sets the process umask to 077 at start, so everything the daemon (and what
 *   it runs) creates from then on is private;
 * - {@link narrowModes} narrows an existing install at start (a chmod of what is looser, logged once
 *   per path); symlinks are never followed (a chmod would land on the link's target);
 * - {@link looseModes} lists what is looser, for `familiar doctor`.
 */
import { chmodSync, lstatSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";

/** One path and the mode it should have. */
interface Wanted {
  path: string;
  mode: number;
  what: string;
}

/** A path whose mode is looser than it should be. */
export interface LooseMode {
  path: string;
  what: string;
  mode: number;
  wanted: number;
}

/** Sets the umask to 077 (group and others get nothing on new files); returns the previous one. */
export function privateUmask(): number {
  return process.umask(0o077);
}

/** The daemon's private paths for a config (those that exist are checked). */
function wanted(dataDir: string, workspace: string, configFile: string | undefined): Wanted[] {
  const data = resolve(dataDir);
  const out: Wanted[] = [
    { path: data, mode: 0o700, what: "data dir" },
    { path: resolve(workspace), mode: 0o700, what: "workspace" },
  ];
  if (configFile) out.push({ path: resolve(configFile), mode: 0o600, what: "config" });
  let names: string[] = [];
  try {
    names = readdirSync(data);
  } catch {
    /* no data dir yet */
  }
  for (const name of names) {
    const p = join(data, name);
    const st = lstatOf(p);
    if (!st || st.isSymbolicLink()) continue;
    if (st.isDirectory()) out.push({ path: p, mode: 0o700, what: "data dir folder" });
    else if (st.isFile())
      out.push({ path: p, mode: 0o600, what: name.startsWith("familiar.db") ? "database" : "data file" });
  }
  return out;
}

function lstatOf(p: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/** Paths that are readable, writable or listable by group or others (symlinks are not followed). */
export function looseModes(dataDir: string, workspace: string, configFile?: string): LooseMode[] {
  const out: LooseMode[] = [];
  for (const w of wanted(dataDir, workspace, configFile)) {
    const st = lstatOf(w.path);
    if (!st || st.isSymbolicLink()) continue;
    const mode = Number(st.mode) & 0o777;
    if ((mode & 0o077) !== 0) out.push({ path: w.path, what: w.what, mode, wanted: w.mode });
  }
  return out;
}

/**
 * Narrows every loose path to its private mode (keeping the owner's own bits). Returns what was
 * changed, and what could not be (not the owner, read-only file system) with the reason.
 */
export function narrowModes(
  dataDir: string,
  workspace: string,
  configFile?: string,
): { narrowed: LooseMode[]; failed: { path: string; reason: string }[] } {
  const narrowed: LooseMode[] = [];
  const failed: { path: string; reason: string }[] = [];
  for (const l of looseModes(dataDir, workspace, configFile)) {
    try {
      chmodSync(l.path, l.mode & 0o700);
      narrowed.push(l);
    } catch (err) {
      failed.push({ path: l.path, reason: (err as Error).message });
    }
  }
  return { narrowed, failed };
}

/** `0644` for messages. */
export function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, "0")}`;
}
