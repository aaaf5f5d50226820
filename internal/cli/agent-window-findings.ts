/**
 * The context-window findings (16K/32K rules) of the agents config.yaml does not hold, for
 * `familiar config check` and `familiar doctor`: workspace agent files and API agents, checked by
 * the same rules as config.yaml agents (models/context-window.ts). The doctor's `context windows`
 * line lists them beside the config's own warnings.
 *
 * Invariants:
 * - agent files are read by the catalog's own loader (FileAgentSource: through the workspace door,
 *   links refused, never followed); nothing here opens a workspace file;
 * - API agents come from `<data_dir>/familiar.db` opened read-only, never migrated (safe while the
 *   daemon runs); no database yet means no API agents.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Config } from "../config/schema.js";
import { silentLogger } from "../log/logger.js";
import { formatProblem } from "../config/errors.js";
import { contextWindowWarnings, type ContextWindowFinding } from "../models/context-window.js";
import type { AgentDef } from "../agent/agents.js";
import { FileAgentSource } from "../agent/catalog/file-agents.js";
import { ApiAgentStore } from "../agent/catalog/api-agents.js";
import { sourceWindowFindings } from "../agent/catalog/agent-windows.js";

/** The findings, and why API agents could not be read (when they could not). */
export interface AgentWindowReport {
  findings: ContextWindowFinding[];
  apiUnreadable?: string;
}

/** Findings of every workspace and API agent of `cfg` (config.yaml agents are the config's own). */
export function agentWindowReport(cfg: Config): AgentWindowReport {
  const files = new FileAgentSource(() => cfg, silentLogger());
  files.load();
  const defs: AgentDef[] = [...files.list()];
  let apiUnreadable: string | undefined;
  try {
    defs.push(...apiAgents(cfg));
  } catch (err) {
    apiUnreadable = `API agents not checked: ${(err as Error).message}`;
  }
  return { findings: sourceWindowFindings(cfg, defs), ...(apiUnreadable ? { apiUnreadable } : {}) };
}

/** The API agents stored in the configured database (none when it does not exist yet). */
function apiAgents(cfg: Config): AgentDef[] {
  const file = join(cfg.data_dir, "familiar.db");
  if (!existsSync(file)) return [];
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    const hasTable = db
      .prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'api_agents'")
      .get()!.n;
    return hasTable ? new ApiAgentStore(db).list() : [];
  } finally {
    db.close();
  }
}

/**
 * The doctor's `context windows` line: `fail` when a workspace or API agent's model is below the
 * minimum (config.yaml's own are on the `config` line), `warn` for every window under the warning
 * threshold; undefined when there is nothing to say.
 */
export function checkContextWindows(
  cfg: Config,
): { status: "warn" | "fail"; name: string; detail: string } | undefined {
  const agents = agentWindowReport(cfg);
  const errors = agents.findings.filter((f) => f.level === "error");
  const warnings = [...contextWindowWarnings(cfg), ...agents.findings.filter((f) => f.level === "warning")];
  const lines = [
    ...[...errors, ...warnings].map(formatProblem),
    ...(agents.apiUnreadable ? [agents.apiUnreadable] : []),
  ];
  if (lines.length === 0) return undefined;
  return { status: errors.length > 0 ? "fail" : "warn", name: "context windows", detail: lines.join("; ") };
}
