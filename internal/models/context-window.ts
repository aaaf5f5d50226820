/**
 * Context-window resolution and validation.
 *
 * Order (first defined wins):
 *   1. `models.providers.<p>.models.<m>.context_window` (what the operator stated for this model);
 *   2. the known-model table (`known-models.ts`);
 *   3. the agent default: `agents.<id>.context_window`, then `agents.defaults.context_window`;
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

/** Resolves the context window and says where the number came from. */
export function resolveContextWindowDetailed(
  config: Config,
  modelRef: string,
  agentId?: string,
): { tokens: number; source: ContextWindowSource } {
  const slash = modelRef.indexOf("/");
  const provider = slash > 0 ? modelRef.slice(0, slash) : "";
  const model = slash > 0 ? modelRef.slice(slash + 1) : modelRef;
  const perModel = config.models.providers[provider]?.models[model]?.context_window;
  if (perModel !== undefined) return { tokens: perModel, source: "model-config" };
  const known = knownContextWindow(model);
  if (known !== undefined) return { tokens: known, source: "known-model" };
  if (agentId !== undefined && agentId !== "defaults" && agentId !== "default") {
    const agent = (config.agents as Record<string, unknown>)[agentId];
    const cw =
      agent && typeof agent === "object" ? (agent as { context_window?: unknown }).context_window : undefined;
    if (typeof cw === "number") return { tokens: cw, source: "agent" };
  }
  const defaults = config.agents.defaults.context_window;
  if (defaults !== undefined) return { tokens: defaults, source: "agent-defaults" };
  if (config.models.context_window !== undefined)
    return { tokens: config.models.context_window, source: "models" };
  return { tokens: CONTEXT_WINDOW_FALLBACK, source: "fallback" };
}

/** The effective context window in tokens for `modelRef` (`<provider>/<model>`) used by `agentId`. */
export function resolveContextWindow(config: Config, modelRef: string, agentId?: string): number {
  return resolveContextWindowDetailed(config, modelRef, agentId).tokens;
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

/** A model reference in the config whose context window is below {@link CONTEXT_WINDOW_MINIMUM}. */
export interface ContextWindowProblem {
  /** The config key that names the model (`models.primary`, `agents.coder.model`, ...). */
  path: string;
  message: string;
}

/**
 * Every model the config names (primary, fallbacks, each model-engine agent's `model`) whose
 * resolved window the daemon would refuse at run time: `familiar config check` and `doctor` report
 * them, so a config is never accepted and then refused on the first turn.
 */
export function contextWindowProblems(config: Config): ContextWindowProblem[] {
  return contextWindowFindings(config).filter((f) => f.level === "error");
}

/**
 * Every model the config names whose window is usable but under {@link CONTEXT_WINDOW_WARNING}:
 * compaction will run often. `config check`, `doctor`, the daemon's start and every reload report
 * them (issue 34: an agent's own 20K model logged nothing).
 */
export function contextWindowWarnings(config: Config): ContextWindowProblem[] {
  return contextWindowFindings(config).filter((f) => f.level === "warning");
}

/** Both kinds of finding, one per config key and model. */
export function contextWindowFindings(
  config: Config,
): (ContextWindowProblem & { level: "error" | "warning" })[] {
  const refs: { path: string; ref: string; agentId?: string }[] = [];
  if (config.models.primary) refs.push({ path: "models.primary", ref: config.models.primary });
  config.models.fallbacks.forEach((ref, i) => refs.push({ path: `models.fallbacks[${i}]`, ref }));
  for (const [id, def] of Object.entries(config.agents)) {
    if (id === "defaults" || typeof def !== "object" || def === null) continue;
    const agent = def as { model?: unknown; engine?: unknown };
    // cli and claude-cli agents never call a model through Familiar: their window is the CLI's business.
    if (agent.engine !== undefined && agent.engine !== "model") continue;
    if (typeof agent.model === "string")
      refs.push({ path: `agents.${id}.model`, ref: agent.model, agentId: id });
    else if (config.models.primary)
      refs.push({ path: `agents.${id}`, ref: config.models.primary, agentId: id });
  }
  const out: (ContextWindowProblem & { level: "error" | "warning" })[] = [];
  const seen = new Set<string>();
  for (const { path, ref, agentId } of refs) {
    if (ref.startsWith("echo/")) continue;
    const { tokens, source } = resolveContextWindowDetailed(config, ref, agentId);
    if (tokens >= CONTEXT_WINDOW_WARNING) continue;
    // An agent on the primary model without a window of its own says what models.primary says.
    if (agentId !== undefined && path === `agents.${agentId}` && source !== "agent") continue;
    const key = `${path}|${ref}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(
      tokens < CONTEXT_WINDOW_MINIMUM
        ? {
            path,
            level: "error",
            message:
              `expected a model with a context window of at least ${CONTEXT_WINDOW_MINIMUM} tokens, got ${ref} ` +
              `with ${tokens} (${sourceText(source, ref, agentId)}); the daemon would refuse every turn on it`,
          }
        : {
            path,
            level: "warning",
            message:
              `${ref} has a context window of ${tokens} tokens (${sourceText(source, ref, agentId)}), under ` +
              `${CONTEXT_WINDOW_WARNING}: it works, but compaction will run often`,
          },
    );
  }
  return out;
}

function sourceText(source: ContextWindowSource, ref: string, agentId?: string): string {
  const [provider, ...rest] = ref.split("/");
  switch (source) {
    case "model-config":
      return `models.providers.${provider}.models.${rest.join("/")}.context_window`;
    case "known-model":
      return "the built-in model table";
    case "agent":
      return `agents.${agentId ?? "?"}.context_window`;
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
