/**
 * Where the owner's running daemons are, for a CLI started in any directory:
 * `$XDG_STATE_HOME/familiar/daemons.json` (default `~/.local/state/familiar/daemons.json`), mode 0600
 * in a 0700 directory. `familiar run` adds itself (pid, config file, data dir, address) once its
 * gateway listens and removes itself at a clean stop; entries of dead processes are dropped on read.
 * It holds no token: the CLI reads the token where the data dir's card says.
 *
 * Beside it, `workspaces.json` (same modes) remembers every workspace a daemon of this user ever ran
 * with, and is never pruned: the CLI refuses a config or card at or under one (gateway/owner-files.ts)
 * even after its daemon stopped or the model removed the workspace's marker file.
 *
 * Invariant (docs/security.md, "The daemon registry"): the CLI trusts the file only when it is a
 * regular file owned by the CLI's user and writable by nobody else, and an entry only while its pid
 * lives and its config file exists. A planted or loosened file is ignored, never followed.
 */
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** One running daemon. */
export interface DaemonEntry {
  pid: number;
  /** Absolute path of the config file it was started with. */
  configFile: string;
  dataDir: string;
  /** Base URL of its gateway, e.g. `http://127.0.0.1:18790`. */
  url: string;
  startedAt: number;
  /** Absolute path of its workspace (absent in entries written before issue 47). */
  workspace?: string;
}

/** The registry file for `env` (XDG_STATE_HOME, else HOME/.local/state). */
export function registryPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(base, "familiar", "daemons.json");
}

/** The remembered-workspaces file beside the registry. */
export function workspacesPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(registryPath(env), "..", "workspaces.json");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** True when the file may be trusted: a regular file of ours that only we can write. */
function trusted(file: string): boolean {
  try {
    const st = lstatSync(file);
    if (!st.isFile()) return false;
    if (typeof process.getuid === "function" && st.uid !== process.getuid()) return false;
    return (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Every live daemon of the registry, newest first; none when the file is missing or not trusted. */
export function readRegistry(env: NodeJS.ProcessEnv = process.env): DaemonEntry[] {
  const file = registryPath(env);
  if (!trusted(file)) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return [];
  }
  if (!Array.isArray(raw)) return [];
  return raw
    .filter(
      (e): e is DaemonEntry =>
        !!e &&
        typeof e === "object" &&
        typeof (e as DaemonEntry).pid === "number" &&
        typeof (e as DaemonEntry).configFile === "string" &&
        typeof (e as DaemonEntry).dataDir === "string" &&
        typeof (e as DaemonEntry).url === "string",
    )
    .filter((e) => alive(e.pid))
    .sort((a, b) => (b.startedAt ?? 0) - (a.startedAt ?? 0));
}

function writeJson(file: string, value: unknown): void {
  mkdirSync(join(file, ".."), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
}

function write(env: NodeJS.ProcessEnv, entries: DaemonEntry[]): void {
  writeJson(registryPath(env), entries);
}

/**
 * Every workspace a daemon of this user ran with: the remembered list plus live entries. A file
 * others may write is ignored (it could only hide a workspace, so an untrusted list counts as empty).
 */
export function knownWorkspaces(env: NodeJS.ProcessEnv = process.env): string[] {
  const out = new Set<string>();
  const file = workspacesPath(env);
  if (trusted(file)) {
    try {
      const raw: unknown = JSON.parse(readFileSync(file, "utf8"));
      if (Array.isArray(raw)) for (const w of raw) if (typeof w === "string" && w) out.add(w);
    } catch {
      /* a torn file: the live entries and the markers still count */
    }
  }
  for (const e of readRegistry(env)) if (typeof e.workspace === "string" && e.workspace) out.add(e.workspace);
  return [...out];
}

/** Adds `workspace` to the remembered list. Best effort, like the registry. */
export function rememberWorkspace(workspace: string, env: NodeJS.ProcessEnv = process.env): void {
  try {
    const all = knownWorkspaces(env);
    if (all.includes(workspace)) return;
    writeJson(workspacesPath(env), [...all, workspace]);
  } catch {
    /* the marker file in the workspace still tells the CLI */
  }
}

/** Adds (or replaces) this daemon's entry. Best effort: a read-only home must not stop the daemon. */
export function registerDaemon(entry: DaemonEntry, env: NodeJS.ProcessEnv = process.env): void {
  try {
    write(env, [entry, ...readRegistry(env).filter((e) => e.pid !== entry.pid)]);
  } catch {
    /* the CLI then finds the daemon through config.yaml and the data dir, as before */
  }
}

/** Removes this daemon's entry (at a clean stop). Best effort. */
export function unregisterDaemon(pid = process.pid, env: NodeJS.ProcessEnv = process.env): void {
  try {
    const rest = readRegistry(env).filter((e) => e.pid !== pid);
    write(env, rest);
  } catch {
    /* dead entries are dropped on the next read anyway */
  }
}
