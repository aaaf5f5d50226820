/**
 * Everything an import reads from an OpenClaw state directory, gathered into one value
 * ({@link OpenClawSource}), verified against openclaw@2026.9.6:
 *
 * - `openclaw.json` (JSON5): agents (`agents.defaults`, `agents.entries.<id>` with `workspace`),
 *   `models.providers`, `agents.defaults.model` (primary, fallbacks), `agents.defaults.heartbeat`,
 *   `channels.telegram` / `channels.discord`;
 * - each agent's workspace (default `<state>/workspace`): the Markdown files, `memory/*.md`,
 *   `skills/<name>/SKILL.md`; plus the shared `<state>/skills/`;
 * - `state/openclaw.sqlite`: cron jobs and DM pairing approvals; older installs kept the approvals in
 *   `credentials/<channel>-allowFrom.json`, read too;
 * - `agents/<id>/agent/openclaw-agent.sqlite`: transcripts; older installs kept them as
 *   `agents/<id>/sessions/*.jsonl`, read too.
 *
 * The directory is untrusted input (see safe-tree.ts): nothing is written, no symlink is followed,
 * every read is capped, and no code in it runs.
 *
 * Over 300 lines on purpose: it is the one place that reads the untrusted OpenClaw directory, so
 * every read (its cap, its fallback to the older layout, the problems it reports) is reviewed
 * together; path safety is already apart in safe-tree.ts, the SQLite readers in openclaw-db.ts.
 */
import JSON5 from "json5";
import { AGENT_NAME_RE } from "../agent/catalog/file-agents.js";
import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import {
  DbSnapshot,
  eventMessage,
  readCronJobs,
  readPairingAllow,
  readSessions,
  type OpenClawCronRow,
  type OpenClawSession,
  type TranscriptMessage,
} from "./openclaw-db.js";
import { SafeTree, UntrustedPathError } from "./safe-tree.js";

/** Largest openclaw.json read. */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
/** Largest legacy JSONL transcript read. */
const MAX_JSONL_BYTES = 64 * 1024 * 1024;
/** Largest legacy allowFrom file. */
const MAX_SMALL_JSON = 1024 * 1024;

export type Json = Record<string, unknown>;

export const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
export const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export interface OpenClawAgent {
  id: string;
  isDefault: boolean;
  /** The agent's workspace, when it could be found and read; else why not. */
  workspace: SafeTree | undefined;
  workspaceNote?: string;
}

export interface OpenClawSource {
  dir: string;
  tree: SafeTree;
  config: Json;
  /** `meta.lastTouchedVersion` of openclaw.json, when present. */
  version: string | undefined;
  agents: OpenClawAgent[];
  cronJobs: OpenClawCronRow[];
  pairing: { channel: string; account: string; entry: string }[];
  sessions: (OpenClawSession & { agentId: string })[];
  /** Things that could not be read, one line each. */
  problems: string[];
}

/** The state dir to read: `--from`, else `OPENCLAW_STATE_DIR`, else `~/.openclaw`. */
export function defaultOpenClawDir(env: NodeJS.ProcessEnv, home: string): string {
  const fromEnv = env.OPENCLAW_STATE_DIR?.trim();
  return resolve(fromEnv ? fromEnv : resolve(home, ".openclaw"));
}

/** An error that stops the import before anything is written. */
export class ImportSourceError extends Error {
  readonly code = "IMPORT_SOURCE";
  constructor(message: string) {
    super(message);
    this.name = "ImportSourceError";
  }
}

function readConfig(tree: SafeTree): Json {
  let text: string;
  try {
    text = tree.readText("openclaw.json", MAX_CONFIG_BYTES);
  } catch (err) {
    throw new ImportSourceError(
      `${tree.root} is not an OpenClaw state directory: expected openclaw.json in it, got ${(err as Error).message}`,
    );
  }
  try {
    return obj(JSON5.parse(text));
  } catch (err) {
    throw new ImportSourceError(
      `${tree.root}/openclaw.json: expected JSON5, got a parse error: ${(err as Error).message}`,
    );
  }
}

/**
 * An agent's workspace: the configured path when it is a readable directory, else the default place
 * under the state dir (a state dir copied from another machine keeps absolute paths of that machine).
 */
/** Files every OpenClaw workspace has (onboarding writes them). */
const WORKSPACE_MARKERS = ["AGENTS.md", "SOUL.md", "IDENTITY.md"];

function workspaceOf(
  tree: SafeTree,
  configured: string | undefined,
  id: string,
  isDefault: boolean,
): {
  workspace: SafeTree | undefined;
  note?: string;
} {
  const fallback = isDefault ? "workspace" : `workspace-${id}`;
  if (configured) {
    const abs = isAbsolute(configured) ? configured : resolve(tree.root, configured);
    const rel = relative(tree.root, abs);
    const inside = !rel.startsWith("..") && !isAbsolute(rel);
    const t = inside ? new SafeTree(resolve(tree.root, rel)) : new SafeTree(abs);
    if (inside && tree.isDir(rel)) return { workspace: t };
    if (!inside && t.isDir("")) {
      // openclaw.json may have been edited by the agent it configures: a workspace outside the state
      // dir is read only when it looks like one (it has OpenClaw's personality files) and is not a
      // directory that holds the state dir (a home directory, `/`), and the report names it.
      const up = relative(abs, tree.root);
      if (!up.startsWith("..") && !isAbsolute(up))
        return { workspace: undefined, note: `workspace ${abs} contains the state dir itself; not read` };
      if (!WORKSPACE_MARKERS.some((f) => t.isFile(f)))
        return {
          workspace: undefined,
          note: `workspace ${abs} (outside the state dir) has none of ${WORKSPACE_MARKERS.join(", ")}; not read`,
        };
      return {
        workspace: t,
        note: `read the workspace ${abs}, outside the state dir, as openclaw.json names it`,
      };
    }
    if (tree.isDir(fallback))
      return {
        workspace: new SafeTree(resolve(tree.root, fallback)),
        note: `configured workspace ${configured} not found (or a symlink); read ${fallback}/ of the state dir instead`,
      };
    return { workspace: undefined, note: `workspace ${configured} not found (or a symlink)` };
  }
  if (tree.isDir(fallback)) return { workspace: new SafeTree(resolve(tree.root, fallback)) };
  return { workspace: undefined, note: `no workspace (expected ${fallback}/ in the state dir)` };
}

function agentsOf(tree: SafeTree, config: Json): OpenClawAgent[] {
  const agents = obj(config.agents);
  const defaults = obj(agents.defaults);
  const entries = obj(agents.entries);
  // Older configs list agents as `agents.list: [{id, default, workspace}]`.
  const list = arr(agents.list).map(obj);
  const ids = [
    ...new Set([...Object.keys(entries), ...list.map((a) => str(a.id)).filter((x) => x !== undefined)]),
  ];
  if (ids.length === 0) ids.push("main");
  const flagged = list.find((a) => a.default === true);
  const defaultId =
    str(obj(defaults.systemAgent).agentId) ??
    (flagged ? str(flagged.id) : undefined) ??
    (ids.includes("main") ? "main" : ids[0]);
  return ids.map((id) => {
    const entry = { ...obj(list.find((a) => a.id === id)), ...obj(entries[id]) };
    const isDefault = id === defaultId;
    const configured = str(entry.workspace) ?? (isDefault ? str(defaults.workspace) : undefined);
    const w = workspaceOf(tree, configured, id, isDefault);
    return { id, isDefault, workspace: w.workspace, ...(w.note ? { workspaceNote: w.note } : {}) };
  });
}

/** Legacy `agents/<id>/sessions/*.jsonl` transcripts (OpenClaw before the SQLite store). */
function legacySessions(tree: SafeTree, agentId: string, problems: string[]): OpenClawSession[] {
  const dir = `agents/${agentId}/sessions`;
  const out: OpenClawSession[] = [];
  for (const e of tree.list(dir)) {
    if (e.kind !== "file" || !e.name.endsWith(".jsonl")) {
      if (e.kind === "symlink") problems.push(`${dir}/${e.name}: a symlink, not followed`);
      continue;
    }
    let text: string;
    try {
      text = tree.readText(`${dir}/${e.name}`, MAX_JSONL_BYTES);
    } catch (err) {
      problems.push(`${dir}/${e.name}: ${(err as Error).message}`);
      continue;
    }
    const messages: TranscriptMessage[] = [];
    let id = e.name.replace(/\.jsonl$/, "");
    let first = 0;
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      try {
        const ev: unknown = JSON.parse(line);
        const o = obj(ev);
        if (o.type === "session" && str(o.id)) {
          id = str(o.id) ?? id;
          first = Date.parse(String(o.timestamp)) || first;
        }
        const m = eventMessage(ev, first);
        if (m) messages.push(m);
      } catch {
        /* a torn last line of a crashed write: skip it */
      }
    }
    const at = messages[0]?.at ?? first;
    out.push({
      id,
      key: `agent:${agentId}:${id}`,
      createdAt: at,
      updatedAt: messages.at(-1)?.at ?? at,
      messages,
    });
  }
  return out;
}

/** Legacy `credentials/<channel>-allowFrom.json` (`{allowFrom: [...]}` or a bare array). */
function legacyAllowFrom(
  tree: SafeTree,
  problems: string[],
): { channel: string; account: string; entry: string }[] {
  const out: { channel: string; account: string; entry: string }[] = [];
  for (const e of tree.list("credentials")) {
    const m = /^(telegram|discord)(?:-(.+))?-allowFrom\.json$/.exec(e.name);
    if (!m || e.kind !== "file") continue;
    try {
      const v: unknown = JSON.parse(tree.readText(`credentials/${e.name}`, MAX_SMALL_JSON));
      const list = Array.isArray(v) ? v : arr(obj(v).allowFrom);
      for (const entry of list)
        if (typeof entry === "string" || typeof entry === "number")
          out.push({ channel: m[1] ?? "", account: m[2] ?? "default", entry: String(entry) });
    } catch (err) {
      problems.push(`credentials/${e.name}: ${(err as Error).message}`);
    }
  }
  return out;
}

function withDb<T>(tree: SafeTree, rel: string, problems: string[], fn: (s: DbSnapshot) => T): T | undefined {
  let snap: DbSnapshot | undefined;
  try {
    snap = DbSnapshot.open(tree, rel);
    return snap ? fn(snap) : undefined;
  } catch (err) {
    problems.push(`${rel}: cannot read (${(err as Error).message})`);
    return undefined;
  } finally {
    snap?.close();
  }
}

/** Reads an OpenClaw state directory. Throws {@link ImportSourceError} when it is not one. */
export function readOpenClaw(dir: string): OpenClawSource {
  // The directory the owner names is trusted to be theirs (`~/.openclaw` may be a symlink to another
  // disk): resolve it once. Below it, nothing is followed.
  let root: string;
  try {
    root = realpathSync(dir);
  } catch (err) {
    throw new ImportSourceError(
      `${dir}: expected an OpenClaw state directory, got ${(err as Error).message}`,
    );
  }
  const tree = new SafeTree(root);
  try {
    if (!tree.isDir("")) throw new ImportSourceError(`${tree.root}: expected a directory`);
  } catch (err) {
    if (err instanceof UntrustedPathError) throw new ImportSourceError(err.message);
    throw err;
  }
  const config = readConfig(tree);
  const problems: string[] = [];
  const agents = agentsOf(tree, config);
  const cronJobs = withDb(tree, "state/openclaw.sqlite", problems, readCronJobs) ?? [];
  const pairing = [
    ...(withDb(tree, "state/openclaw.sqlite", problems, readPairingAllow) ?? []),
    ...legacyAllowFrom(tree, problems),
  ];
  const sessions: OpenClawSource["sessions"] = [];
  for (const a of agents) {
    // An id is a path part of the state dir's layout: one that is not a plain name is not read.
    if (!AGENT_NAME_RE.test(a.id)) continue;
    const fromDb = withDb(tree, `agents/${a.id}/agent/openclaw-agent.sqlite`, problems, readSessions);
    if (fromDb?.unreadable)
      problems.push(`agents/${a.id}: ${fromDb.unreadable} transcript events could not be decoded`);
    const seen = new Set<string>();
    for (const s of fromDb?.sessions ?? []) {
      seen.add(s.id);
      sessions.push({ ...s, agentId: a.id });
    }
    for (const s of legacySessions(tree, a.id, problems))
      if (!seen.has(s.id)) sessions.push({ ...s, agentId: a.id });
  }
  return {
    dir: tree.root,
    tree,
    config,
    version: str(obj(config.meta).lastTouchedVersion),
    agents,
    cronJobs,
    pairing,
    sessions,
    problems,
  };
}
