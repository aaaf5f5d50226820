/**
 * Agent definitions. Config agents are the keys of `agents` other than the reserved settings keys;
 * the default agent exists even when config does not define it. Other sources (workspace YAML files,
 * API-created agents) plug in through `AgentSource`.
 */
import { agentSchema, type AgentConfig, type Config } from "../config/schema.js";

/** Keys of `agents` that are settings, not agent ids. */
export const RESERVED_AGENT_KEYS = new Set(["default", "max_concurrent", "defaults"]);

export interface AgentDef extends AgentConfig {
  id: string;
  /** Where the definition came from: `config`, `file:<path>`, `api`, `builtin`. */
  source: string;
}

/** Extra agent definitions beyond config.yaml (files, API). */
export interface AgentSource {
  list(): AgentDef[];
}

/** Lists every agent: config agents, the implicit default, then extra sources (config wins on clash). */
export function listAgents(config: Config, sources: readonly AgentSource[] = []): AgentDef[] {
  const out = new Map<string, AgentDef>();
  for (const [id, def] of Object.entries(config.agents)) {
    if (RESERVED_AGENT_KEYS.has(id)) continue;
    out.set(id, { ...(def as AgentConfig), id, source: "config" });
  }
  const defId = config.agents.default;
  if (!out.has(defId)) out.set(defId, { ...agentSchema.parse({}), id: defId, source: "builtin" });
  for (const src of sources) for (const a of src.list()) if (!out.has(a.id)) out.set(a.id, a);
  return [...out.values()];
}

/** Finds one agent by id. */
export function findAgent(
  config: Config,
  id: string,
  sources: readonly AgentSource[] = [],
): AgentDef | undefined {
  if (RESERVED_AGENT_KEYS.has(id)) return undefined;
  const def = (config.agents as Record<string, unknown>)[id] as AgentConfig | undefined;
  if (def) return { ...def, id, source: "config" };
  if (id === config.agents.default) return { ...agentSchema.parse({}), id, source: "builtin" };
  for (const src of sources) {
    const a = src.list().find((x) => x.id === id);
    if (a) return a;
  }
  return undefined;
}
