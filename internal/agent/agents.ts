/**
 * Agent definitions. Config agents are the keys of `agents` other than the reserved settings keys;
 * the built-in `main` agent exists when it is the default and nothing defines it. Other sources
 * (workspace YAML files, API-created agents) plug in through `AgentSource`; config.yaml wins a clash.
 *
 * Invariant: a default that names an agent nobody defines (not `main`) is unknown here; the host then
 * answers with the echo fallback, which says so (internal/agent/echo-fallback.ts).
 */
import { agentSchema, type AgentConfig, type Config } from "../config/schema.js";

/** Keys of `agents` that are settings, not agent ids. */
export const RESERVED_AGENT_KEYS = new Set(["default", "max_concurrent", "defaults"]);

/** The id of the built-in agent that exists without a definition (when it is the default). */
export const BUILTIN_AGENT_ID = "main";

export interface AgentDef extends AgentConfig {
  id: string;
  /** Where the definition came from: `config`, `file:<path>`, `api`, `builtin`. */
  source: string;
}

/** Extra agent definitions beyond config.yaml (files, API). */
export interface AgentSource {
  list(): AgentDef[];
}

/**
 * Lists every agent: config agents, the built-in `main` (unless some source defines it), then extra
 * sources (config wins on clash).
 */
export function listAgents(config: Config, sources: readonly AgentSource[] = []): AgentDef[] {
  const out = new Map<string, AgentDef>();
  for (const [id, def] of Object.entries(config.agents)) {
    if (RESERVED_AGENT_KEYS.has(id)) continue;
    out.set(id, { ...(def as AgentConfig), id, source: "config" });
  }
  const extra = sources.flatMap((s) => s.list());
  const builtin = builtinAgent(config);
  if (builtin && !out.has(builtin.id) && !extra.some((a) => a.id === builtin.id))
    out.set(builtin.id, builtin);
  for (const a of extra) if (!out.has(a.id)) out.set(a.id, a);
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
  for (const src of sources) {
    const a = src.list().find((x) => x.id === id);
    if (a) return a;
  }
  const builtin = builtinAgent(config);
  return builtin?.id === id ? builtin : undefined;
}

/**
 * The built-in agent's settings: the schema's defaults, parsed once (findAgent runs several times a
 * turn; the parse was ~5 µs each). Callers get a copy of this object, never the object itself; the
 * lists inside are shared, so they are frozen: a change fails loudly instead of reaching the next
 * caller. (The object itself is not: a spread of a frozen object takes V8's slow path.)
 */
const builtinDefaults: AgentConfig = agentSchema.parse({});
for (const v of Object.values(builtinDefaults)) if (Array.isArray(v)) Object.freeze(v);

/** The built-in default agent (all defaults), present only while `agents.default` is `main`. */
function builtinAgent(config: Config): AgentDef | undefined {
  if (config.agents.default !== BUILTIN_AGENT_ID) return undefined;
  return { ...builtinDefaults, id: BUILTIN_AGENT_ID, source: "builtin" };
}
