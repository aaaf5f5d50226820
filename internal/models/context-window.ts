/**
 * Context-window resolution and validation.
 *
 * Order (first defined wins):
 *   1. `models.providers.<p>.models.<m>.context_window` (what the operator stated for this model);
 *   2. the known-model table (`known-models.ts`);
 *   3. the agent default: the agent's own `context_window` (in config.yaml, its workspace file or its
 *      API definition), then `agents.defaults.context_window`;
 *   4. `models.context_window`;
 *   5. 128 000.
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { ModelError } from "./types.js";
import { knownContextWindow } from "./known-models.js";

/**
 * Below this the model is refused: the system prompt and tools alone would not leave room to work.
 * The spec's number (REQ-401 `ContextWindowMinimum`), not 16 Ki: a model stated as 16,000 tokens works.
 */
export const CONTEXT_WINDOW_MINIMUM = 16_000;
/** Below this a warning is logged: usable, but compaction will run often (REQ-401 `ContextWindowWarning`). */
export const CONTEXT_WINDOW_WARNING = 32_000;
export const CONTEXT_WINDOW_FALLBACK = 128_000;

export type ContextWindowSource =
  "model-config" | "known-model" | "agent" | "agent-defaults" | "models" | "fallback";

/**
 * The agent a window is resolved for: its id (its `context_window` is then looked up in config.yaml),
 * or the id with its own `context_window` (an agent from a workspace file or the API, which
 * config.yaml does not hold).
 */
export type WindowAgentRef = string | { id: string; context_window?: number | undefined };

/** Resolves the context window and says where the number came from. */
export function resolveContextWindowDetailed(
  config: Config,
  modelRef: string,
  agent?: WindowAgentRef,
): { tokens: number; source: ContextWindowSource } {
  const slash = modelRef.indexOf("/");
  const provider = slash > 0 ? modelRef.slice(0, slash) : "";
  const model = slash > 0 ? modelRef.slice(slash + 1) : modelRef;
  const perModel = config.models.providers[provider]?.models[model]?.context_window;
  if (perModel !== undefined) return { tokens: perModel, source: "model-config" };
  const known = knownContextWindow(model);
  if (known !== undefined) return { tokens: known, source: "known-model" };
  const cw = agentWindow(config, agent);
  if (cw !== undefined) return { tokens: cw, source: "agent" };
  const defaults = config.agents.defaults.context_window;
  if (defaults !== undefined) return { tokens: defaults, source: "agent-defaults" };
  if (config.models.context_window !== undefined)
    return { tokens: config.models.context_window, source: "models" };
  return { tokens: CONTEXT_WINDOW_FALLBACK, source: "fallback" };
}

/** The agent's own `context_window`, from its definition or (given only its id) from config.yaml. */
function agentWindow(config: Config, agent: WindowAgentRef | undefined): number | undefined {
  if (agent === undefined) return undefined;
  if (typeof agent !== "string") return agent.context_window;
  if (agent === "defaults" || agent === "default") return undefined;
  const def = (config.agents as Record<string, unknown>)[agent];
  const cw =
    def && typeof def === "object" ? (def as { context_window?: unknown }).context_window : undefined;
  return typeof cw === "number" ? cw : undefined;
}

/** The effective context window in tokens for `modelRef` (`<provider>/<model>`) used by `agent`. */
export function resolveContextWindow(config: Config, modelRef: string, agent?: WindowAgentRef): number {
  return resolveContextWindowDetailed(config, modelRef, agent).tokens;
}

/**
 * Refuses windows below {@link CONTEXT_WINDOW_MINIMUM} with a clear error (code `MODEL_NOT_CONFIGURED`)
 * and logs a warning below {@link CONTEXT_WINDOW_WARNING}.
 */
export function validateContextWindow(
  tokens: number,
  opts: { logger?: Logger; modelRef?: string } = {},
): void {
  const what = opts.modelRef ?? "the model";
  if (!Number.isFinite(tokens) || tokens < CONTEXT_WINDOW_MINIMUM) {
    throw new ModelError(
      "MODEL_NOT_CONFIGURED",
      `the context window of ${what} is ${tokens} tokens, below the minimum of ${CONTEXT_WINDOW_MINIMUM}; ` +
        `pick a model with a larger window or correct context_window in the config`,
      opts.modelRef ? splitRef(opts.modelRef) : {},
    );
  }
  if (tokens < CONTEXT_WINDOW_WARNING)
    opts.logger?.warn(
      { model: opts.modelRef, contextWindow: tokens },
      `the context window of ${what} is small (${tokens} tokens, under ${CONTEXT_WINDOW_WARNING}); compaction will run often`,
    );
}

/**
 * A model reference whose context window is below {@link CONTEXT_WINDOW_MINIMUM} (or, as a warning,
 * below {@link CONTEXT_WINDOW_WARNING}).
 */
export interface ContextWindowProblem {
  /**
   * Where the owner fixes it: a config key (`models.primary`, `agents.coder.model`), a workspace agent
   * file (`agents/x.yaml (workspace) model`) or an API agent (`API agent x model`).
   */
  path: string;
  message: string;
}

/** One finding: `error` (the daemon refuses every turn on the model) or `warning` (compaction runs often). */
export interface ContextWindowFinding extends ContextWindowProblem {
  level: "error" | "warning";
  /** The model reference and its resolved window. */
  model: string;
  tokens: number;
  /** The agent the finding is about; absent for `models.primary` and `models.fallbacks`. */
  agentId?: string;
}

/** Where an agent is defined: config.yaml, a workspace file (path relative to the workspace), the API. */
export type AgentOrigin = { kind: "config" } | { kind: "workspace"; file: string } | { kind: "api" };

/** An agent as the window check sees it, whichever of the three sources defined it. */
export interface WindowAgent {
  id: string;
  model?: string | undefined;
  engine?: string | undefined;
  context_window?: number | undefined;
  origin: AgentOrigin;
}

/**
 * How a finding names an agent's key: `agents.coder.model` (config.yaml), `agents/x.yaml (workspace)
 * model`, `API agent x model`; without a key, the agent itself.
 */
export function agentKeyName(origin: AgentOrigin, id: string, key?: string): string {
  switch (origin.kind) {
    case "config":
      return key ? `agents.${id}.${key}` : `agents.${id}`;
    case "workspace":
      return key ? `${origin.file} (workspace) ${key}` : `${origin.file} (workspace)`;
    case "api":
      return key ? `API agent ${id} ${key}` : `API agent ${id}`;
  }
}

/**
 * Every model the config names (primary, fallbacks, every model-engine agent's models; `extra` adds
 * workspace and API agents) whose resolved window the daemon would refuse at run time: `familiar
 * config check` and `doctor` report them, so a config is never accepted and then refused on the
 * first turn.
 */
export function contextWindowProblems(
  config: Config,
  extra: readonly WindowAgent[] = [],
): ContextWindowFinding[] {
  return contextWindowFindings(config, extra).filter((f) => f.level === "error");
}

/**
 * Every model the config names whose window is usable but under {@link CONTEXT_WINDOW_WARNING}:
 * compaction will run often. `config check`, `doctor`, the daemon's start and every reload report
 * them (issue 34: an agent's own 20K model logged nothing).
 */
export function contextWindowWarnings(
  config: Config,
  extra: readonly WindowAgent[] = [],
): ContextWindowFinding[] {
  return contextWindowFindings(config, extra).filter((f) => f.level === "warning");
}

/**
 * Both kinds of finding, one per place and model: `models.primary`, `models.fallbacks`, each
 * config.yaml agent, then each of `extra` (workspace and API agents; one whose id config.yaml also
 * defines is skipped, config.yaml wins). The rules are the same for every source
 * ({@link agentWindowFindings}).
 */
export function contextWindowFindings(
  config: Config,
  extra: readonly WindowAgent[] = [],
): ContextWindowFinding[] {
  if (echoOnly(config)) return [];
  const out: ContextWindowFinding[] = [];
  const global: [string, string][] = [
    ...(config.models.primary ? [["models.primary", config.models.primary] as [string, string]] : []),
    ...config.models.fallbacks.map((ref, i): [string, string] => [`models.fallbacks[${i}]`, ref]),
  ];
  for (const [path, ref] of global) {
    const f = finding(config, path, ref);
    if (f) out.push(f.finding);
  }
  const configIds = new Set<string>();
  for (const [id, def] of Object.entries(config.agents)) {
    if (id === "defaults" || typeof def !== "object" || def === null) continue;
    configIds.add(id);
    const a = def as { model?: string; engine?: string; context_window?: number };
    out.push(
      ...agentWindowFindings(config, {
        id,
        model: a.model,
        engine: a.engine,
        context_window: a.context_window,
        origin: { kind: "config" },
      }),
    );
  }
  for (const a of extra) if (!configIds.has(a.id)) out.push(...agentWindowFindings(config, a));
  return out;
}

/**
 * The findings of one agent, whatever its source: the models it would run on (its own `model`, else
 * `models.primary`; then `models.fallbacks`), each resolved with the agent's own `context_window`.
 * A model is reported under the agent when the agent chose it (its `model`) or when the agent's own
 * `context_window` decided its window; otherwise the finding is `models.primary`'s or
 * `models.fallbacks`'s and is not repeated per agent. Agents on a CLI engine are skipped (they never
 * call a model through Familiar), and so is the offline echo model.
 */
export function agentWindowFindings(config: Config, agent: WindowAgent): ContextWindowFinding[] {
  if (echoOnly(config) || (agent.engine !== undefined && agent.engine !== "model")) return [];
  const own = agent.model ?? config.models.primary;
  if (own === undefined) return [];
  const out: ContextWindowFinding[] = [];
  const seen = new Set<string>();
  for (const ref of [own, ...config.models.fallbacks]) {
    const chosen = agent.model !== undefined && ref === agent.model;
    const path = agentKeyName(agent.origin, agent.id, chosen ? "model" : undefined);
    if (seen.has(`${path}|${ref}`)) continue;
    seen.add(`${path}|${ref}`);
    const f = finding(config, path, ref, agent);
    if (f && (chosen || f.source === "agent")) out.push(f.finding);
  }
  return out;
}

/** Without any provider the offline echo model answers every turn, whatever the refs say: nothing to check. */
function echoOnly(config: Config): boolean {
  return Object.keys(config.models.providers).length === 0;
}

/** The finding for `ref` at `path` (resolved for `agent` when given) and where its window came from. */
function finding(
  config: Config,
  path: string,
  ref: string,
  agent?: WindowAgent,
): { finding: ContextWindowFinding; source: ContextWindowSource } | undefined {
  if (ref.startsWith("echo/")) return undefined;
  const { tokens, source } = resolveContextWindowDetailed(config, ref, agent);
  if (tokens >= CONTEXT_WINDOW_WARNING) return undefined;
  const from = sourceText(source, ref, agent);
  const f: ContextWindowFinding =
    tokens < CONTEXT_WINDOW_MINIMUM
      ? {
          path,
          level: "error",
          model: ref,
          tokens,
          message:
            `expected a model with a context window of at least ${CONTEXT_WINDOW_MINIMUM} tokens, got ${ref} ` +
            `with ${tokens} (${from}); the daemon would refuse every turn on it`,
        }
      : {
          path,
          level: "warning",
          model: ref,
          tokens,
          message:
            `${ref} has a context window of ${tokens} tokens (${from}), under ` +
            `${CONTEXT_WINDOW_WARNING}: it works, but compaction will run often`,
        };
  return { finding: agent ? { ...f, agentId: agent.id } : f, source };
}

function sourceText(source: ContextWindowSource, ref: string, agent?: WindowAgent): string {
  const [provider, ...rest] = ref.split("/");
  switch (source) {
    case "model-config":
      return `models.providers.${provider}.models.${rest.join("/")}.context_window`;
    case "known-model":
      return "the built-in model table";
    case "agent":
      return agent ? agentKeyName(agent.origin, agent.id, "context_window") : "the agent's context_window";
    case "agent-defaults":
      return "agents.defaults.context_window";
    case "models":
      return "models.context_window";
    case "fallback":
      return "the default";
  }
}

function splitRef(ref: string): { provider?: string; model?: string } {
  const i = ref.indexOf("/");
  return i > 0 ? { provider: ref.slice(0, i), model: ref.slice(i + 1) } : { model: ref };
}
