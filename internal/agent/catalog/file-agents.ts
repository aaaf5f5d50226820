/**
 * Agents defined as one YAML file each in `<workspace>/agents/*.yaml`, hot-reloaded. An invalid file
 * is reported with its path and key while the others keep working; a name that clashes with
 * config.yaml is an error naming both places (config.yaml wins).
 *
 * Invariants:
 * - `load()` swaps the whole set at once: a reader never sees a half-loaded folder;
 * - an agent whose `prompt_file` uses an unknown `{{variable}}` does not load (error naming the agent
 *   file, the prompt file and the variable); a missing prompt file is only a warning;
 * - the folder is created when watching starts, so files added later are seen even in a fresh
 *   workspace (a watcher on a missing folder would only ever see the folder appear);
 * - nothing in the workspace grants power (docs/security.md, invariant 2): a sandboxed command can
 *   write this folder, so a file may not choose an engine or a program, add MCP servers, point its
 *   `prompt_file` outside the workspace, or get tools beyond `agents.defaults.workspace_agent_tools`
 *   (enforced where the tool set is built, {@link workspaceToolCeiling}). Such a file is refused,
 *   naming the file and the key; config.yaml may still define any of it;
 * - files are read through the workspace door: a link (`agents/x.yaml -> ...`, or the folder itself
 *   a link) is refused and named, never followed.
 *
 * Over 300 lines on purpose: the rules that refuse power to a workspace-written agent file
 * ({@link workspacePowerKey}, {@link workspaceToolCeiling}, {@link cliProgramKey}) sit beside the
 * loader that applies them, so the invariant-2 boundary for agent files is reviewed in one place.
 */
import { zoneOf } from "../../workspace/zones.js";
import { join } from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { agentSchema, type Config } from "../../config/schema.js";
import { issuesToProblems } from "../../config/errors.js";
import type { Logger } from "../../log/logger.js";
import { RESERVED_AGENT_KEYS, type AgentDef, type AgentSource } from "../agents.js";
import type { ToolPolicy } from "../../tools/policy.js";
import { reportRefusal } from "../../workspace/refusal-log.js";
import { isWorkspaceError } from "../../workspace/workspace-error.js";
import {
  ensureWorkspaceDirSync,
  linkEntryRefusal,
  listWorkspaceDirSync,
  readWorkspaceFileSync,
} from "../../workspace/workspace-door.js";
import { checkPromptFile } from "./agent-prompt.js";

/** An agent file bigger than this is refused (a real one is a few hundred bytes). */
const MAX_AGENT_FILE_BYTES = 64 * 1024;

/**
 * The first key of a workspace agent file that would grant power only config.yaml may grant, and
 * why: an engine other than the model loop (a CLI engine runs a program on the host), or a prompt
 * file outside the workspace (`/proc/self/environ`, `../config.yaml`).
 */
export function workspacePowerKey(def: {
  engine: string;
  prompt_file?: string | undefined;
}): { key: string; why: string } | undefined {
  if (def.engine !== "model")
    return { key: "engine", why: `engine "${def.engine}" runs a program on the host` };
  const f = def.prompt_file;
  if (f !== undefined && (f.startsWith("/") || /^[a-zA-Z]:[\\/]/.test(f) || f.split(/[\\/]+/).includes("..")))
    return { key: "prompt_file", why: `"${f}" is not a relative path inside the workspace` };
  // The desk is where commands write: a prompt read from it would be the sandbox's to write.
  if (f !== undefined && zoneOf(f) === "desk")
    return {
      key: "prompt_file",
      why: `"${f}" is on the desk, which commands can write; keep prompt files in templates/ or prompts/`,
    };
  return undefined;
}

/**
 * The most tools a workspace agent may have: `agents.defaults.workspace_agent_tools`, or else the
 * default agent's own tool policy (undefined: every tool the default agent has, which is all).
 */
export function workspaceToolCeiling(cfg: Config): ToolPolicy | undefined {
  const set = cfg.agents.defaults.workspace_agent_tools;
  if (set !== undefined) return set;
  const def = (cfg.agents as Record<string, unknown>)[cfg.agents.default] as
    { tools?: ToolPolicy } | undefined;
  return def?.tools;
}

export const AGENT_NAME_RE = /^[a-zA-Z0-9_-]+$/;

export const fileAgentSchema = agentSchema.extend({
  name: z.string().regex(AGENT_NAME_RE, { error: "expected a URL-safe name of letters, digits, _ or -" }),
});

/**
 * The first key of `def` that decides which program a CLI engine runs (`command`, `args`,
 * `extra_args`, `mcp_config`) or how (`sandbox: false`, `pass_env`), if any. Only config.yaml may set these: a workspace agent file can be
 * written by the assistant's own file tools, and an API agent by any token holder, and either would
 * then run any program on the host without the owner's approval (which even `exec` asks for).
 */
export function cliProgramKey(def: {
  command?: string | undefined;
  args: readonly string[];
  extra_args: readonly string[];
  mcp_config?: string | undefined;
  sandbox?: boolean | undefined;
  pass_env?: readonly string[] | undefined;
}): "command" | "args" | "extra_args" | "mcp_config" | "sandbox" | "pass_env" | undefined {
  if (def.command !== undefined) return "command";
  if (def.args.length > 0) return "args";
  if (def.extra_args.length > 0) return "extra_args";
  if (def.mcp_config !== undefined) return "mcp_config";
  // Taking the CLI out of the sandbox or handing it the daemon's variables (docs/security.md,
  // Invariant 3) is config.yaml's alone; the engine ignores them from anywhere else as well.
  if (def.sandbox === false) return "sandbox";
  if ((def.pass_env?.length ?? 0) > 0) return "pass_env";
  return undefined;
}

/** One problem with one agent file: the file, the key (when one is to blame) and what is wrong. */
export interface FileAgentError {
  path: string;
  /** Key path inside the file (`temperature`, `compact.keep_last_n`); absent for syntax errors. */
  key?: string;
  message: string;
}

export class FileAgentSource implements AgentSource {
  private agents = new Map<string, AgentDef>();
  private errs: FileAgentError[] = [];
  private warns: FileAgentError[] = [];
  private watcher: { close(): Promise<void> } | undefined;
  private watchedDir: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private listeners = new Set<() => void>();
  private closed = false;

  constructor(
    private config: () => Config,
    private logger: Logger,
  ) {}

  dir(): string {
    return join(this.config().workspace, "agents");
  }

  /** The folder's entries through the door; a link is recorded as an error naming it. */
  private entries(ws: string, errs: FileAgentError[]): string[] {
    let listed;
    try {
      listed = listWorkspaceDirSync(ws, "agents");
    } catch (err) {
      if (!isWorkspaceError(err)) throw err;
      reportRefusal(err, "agent files");
      errs.push({ path: this.dir(), message: err.message });
      return [];
    }
    const out: string[] = [];
    for (const e of listed) {
      if (!/\.ya?ml$/.test(e.name)) continue;
      if (e.kind === "file") out.push(e.name);
      else if (e.kind === "link") {
        const refusal = linkEntryRefusal(ws, "agents", e.name);
        reportRefusal(refusal, "agent files");
        errs.push({ path: join(this.dir(), e.name), message: refusal.message });
      }
    }
    return out;
  }

  list(): AgentDef[] {
    return [...this.agents.values()];
  }

  /** Files that did not load, each with its path, key and reason. */
  errors(): FileAgentError[] {
    return [...this.errs];
  }

  /** Agents that loaded with a caveat (a missing prompt file: the built-in prompt is used). */
  warnings(): FileAgentError[] {
    return [...this.warns];
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** (Re)reads every file now. */
  load(): void {
    const dir = this.dir();
    const next = new Map<string, AgentDef>();
    const errs: FileAgentError[] = [];
    const warns: FileAgentError[] = [];
    const cfg = this.config();
    const files = this.entries(cfg.workspace, errs);
    for (const f of files) {
      const path = join(dir, f);
      let raw: unknown;
      try {
        const file = readWorkspaceFileSync(cfg.workspace, `agents/${f}`, { maxBytes: MAX_AGENT_FILE_BYTES });
        if (file === undefined) continue;
        raw = parse(file.text);
      } catch (err) {
        if (isWorkspaceError(err)) {
          reportRefusal(err, "agent files");
          errs.push({ path, message: err.message });
          continue;
        }
        errs.push({ path, message: `YAML syntax error: ${(err as Error).message.split("\n")[0] ?? ""}` });
        continue;
      }
      const parsed = fileAgentSchema.safeParse(raw ?? {});
      if (!parsed.success) {
        for (const p of issuesToProblems(parsed.error.issues, raw, fileAgentSchema))
          errs.push({
            path,
            ...(p.path ? { key: p.path } : {}),
            message: p.path ? `${p.path}: ${p.message}` : p.message,
          });
        continue;
      }
      const id = parsed.data.name;
      if (RESERVED_AGENT_KEYS.has(id)) {
        errs.push({ path, key: "name", message: `name: "${id}" is reserved` });
        continue;
      }
      const program = cliProgramKey(parsed.data);
      if (program) {
        errs.push({
          path,
          key: program,
          message: `${program}: a workspace agent file cannot set the program a CLI engine runs (the assistant's file tools can write this folder); define agent "${id}" in config.yaml`,
        });
        continue;
      }
      const power = workspacePowerKey(parsed.data);
      if (power) {
        errs.push({
          path,
          key: power.key,
          message: `${power.key}: a workspace agent file cannot set this (${power.why}; a sandboxed command can write this folder); define agent "${id}" in config.yaml`,
        });
        continue;
      }
      if ((cfg.agents as Record<string, unknown>)[id] !== undefined) {
        errs.push({
          path,
          key: "name",
          message: `name: agent "${id}" is defined both in config.yaml (agents.${id}) and in ${path}; config.yaml wins`,
        });
        continue;
      }
      const first = next.get(id);
      if (first) {
        errs.push({
          path,
          key: "name",
          message: `name: agent "${id}" is also defined in ${first.source.slice(5)}`,
        });
        continue;
      }
      try {
        const { warning } = checkPromptFile(parsed.data, cfg.workspace);
        if (warning) warns.push({ path, key: "prompt_file", message: `prompt_file: ${warning}` });
      } catch (err) {
        errs.push({ path, key: "prompt_file", message: `prompt_file: ${(err as Error).message}` });
        continue;
      }
      next.set(id, { ...parsed.data, id, source: `file:${path}` });
    }
    // Log each problem once, not again on every reload while it persists.
    for (const e of errs)
      if (!this.errs.some((o) => o.path === e.path && o.message === e.message))
        this.logger.error(e, `invalid agent file: ${e.message}`);
    for (const w of warns)
      if (!this.warns.some((o) => o.path === w.path && o.message === w.message))
        this.logger.warn(w, `agent file: ${w.message}`);
    this.agents = next;
    this.errs = errs;
    this.warns = warns;
    for (const fn of this.listeners) fn();
  }

  /**
   * Watches the agents folder (lazy chokidar import), creating it when missing; changes are debounced.
   * Calling it again after the workspace moved re-targets the watcher.
   */
  async watch(debounceMs = 200): Promise<void> {
    const dir = this.dir();
    if (this.watcher && this.watchedDir === dir) return;
    await this.unwatch();
    try {
      ensureWorkspaceDirSync(this.config().workspace, "agents");
    } catch (err) {
      // A planted link at agents/: never followed, never created through; load() names it.
      if (!reportRefusal(err, "agent files")) throw err;
    }
    const { watch } = await import("chokidar");
    const w = watch(dir, { ignoreInitial: true, depth: 0, followSymlinks: false });
    const kick = (): void => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => this.load(), debounceMs);
    };
    w.on("add", kick).on("change", kick).on("unlink", kick).on("addDir", kick).on("unlinkDir", kick);
    w.on("error", (err: unknown) =>
      this.logger.warn({ err: (err as Error).message, dir }, "agent folder watcher failed"),
    );
    await new Promise<void>((resolve) => w.once("ready", () => resolve()));
    if (this.closed) {
      await w.close();
      return;
    }
    this.watcher = w;
    this.watchedDir = dir;
    // A file written between the last load and the watcher being ready would be missed otherwise.
    this.load();
  }

  /** After a config reload: re-read (clashes with config.yaml may have changed) and follow a moved workspace. */
  async configChanged(): Promise<void> {
    if (this.watcher && this.watchedDir !== this.dir()) await this.watch();
    else this.load();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.unwatch();
  }

  private async unwatch(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const w = this.watcher;
    this.watcher = undefined;
    this.watchedDir = undefined;
    await w?.close();
  }
}
