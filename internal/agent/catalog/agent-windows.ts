/**
 * The 16K/32K context-window rules (models/context-window.ts) applied to agents from workspace files
 * and the API, the same way as to config.yaml agents: a model below 16,000 tokens is an error (the
 * router refuses every turn on it), one below 32,000 a warning. Each finding names where the owner fixes it: `agents/x.yaml (workspace) model` or
 * `API agent x model` (config.yaml agents keep their key, `agents.x.model`).
 *
 * Invariants:
 * - the agents checked are exactly the ones the catalog loaded (FileAgentSource read them
 *   through the workspace door; nothing here opens a workspace file);
 * - the window of an agent resolves with its own `context_window` whichever its source, as the
 *   router and the compactor resolve it at run time, so a check and a turn never disagree;
 * - {@link AgentWindowWatch} logs each finding once while it persists (like invalid agent files),
 *   and again after it was fixed and came back.
 */
import { relative, sep } from "node:path";
import type { Config } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import {
  agentWindowFindings,
  type ContextWindowFinding,
  type WindowAgent,
} from "../../models/context-window.js";
import type { AgentDef, AgentSource } from "../agents.js";

/**
 * The agent as the window check sees it; undefined for the built-in agent (all defaults: what
 * `models.primary` says is its finding).
 */
export function windowAgentOf(def: AgentDef, workspace: string): WindowAgent | undefined {
  const base = { id: def.id, model: def.model, engine: def.engine, context_window: def.context_window };
  if (def.source === "config") return { ...base, origin: { kind: "config" } };
  if (def.source === "api") return { ...base, origin: { kind: "api" } };
  if (def.source.startsWith("file:")) {
    const abs = def.source.slice(5);
    const rel = relative(workspace, abs);
    // Relative to the workspace (`agents/x.yaml`), the way the owner finds it; absolute if outside.
    const file = rel && !rel.startsWith("..") ? rel.split(sep).join("/") : abs;
    return { ...base, origin: { kind: "workspace", file } };
  }
  return undefined;
}

/** The findings of `defs` (any source; config.yaml agents are checked by the config's own findings). */
export function sourceWindowFindings(cfg: Config, defs: readonly AgentDef[]): ContextWindowFinding[] {
  const configIds = new Set(Object.keys(cfg.agents));
  const out: ContextWindowFinding[] = [];
  for (const def of defs) {
    if (def.source === "config" || configIds.has(def.id)) continue;
    const agent = windowAgentOf(def, cfg.workspace);
    if (agent) out.push(...agentWindowFindings(cfg, agent));
  }
  return out;
}

/**
 * Logs the findings of workspace and API agents: call {@link check} at start, when the agent files
 * or the API agents change and after a config reload. Config.yaml agents are logged by the daemon's
 * model check (daemon/services.ts), so nothing is logged twice.
 */
export class AgentWindowWatch {
  private logged = new Set<string>();

  constructor(
    private config: () => Config,
    private logger: Logger,
    private sources: readonly AgentSource[],
  ) {}

  /** The current findings of every workspace and API agent. */
  findings(): ContextWindowFinding[] {
    return sourceWindowFindings(
      this.config(),
      this.sources.flatMap((s) => s.list()),
    );
  }

  /** Logs the findings not logged by the previous check (error or warn, like config.yaml agents). */
  check(): void {
    const now = new Set<string>();
    for (const f of this.findings()) {
      const key = `${f.level}|${f.path}|${f.message}`;
      now.add(key);
      if (this.logged.has(key)) continue;
      this.logger[f.level === "error" ? "error" : "warn"](
        { module: "models", key: f.path, model: f.model, contextWindow: f.tokens },
        `${f.path}: ${f.message}`,
      );
    }
    this.logged = now;
  }
}
