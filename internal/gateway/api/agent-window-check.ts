/**
 * The 16K/32K context-window rules for an agent created or changed over `/api`, the same rules as for
 * config.yaml and workspace agents (models/context-window.ts): a model below 16,000 tokens is refused
 * before anything is stored; one under 32,000 is stored and its warnings returned (the daemon logs
 * them too, AgentWindowWatch).
 */
import type { AgentConfig, Config } from "../../config/schema.js";
import { agentWindowFindings } from "../../models/context-window.js";
import { apiError } from "./api-errors.js";

/**
 * The warnings for API agent `id` defined as `def` (`API agent x model: p/m has a context window of
 * 20000 tokens ...`); throws 422 `context_window_too_small` naming the agent, the model, its window
 * and the rule when the router would refuse every turn on it. The error's `field` is `model` when the
 * agent's own model is too small, else `context_window` (its own window made the default model small).
 */
export function apiAgentWindowWarnings(cfg: Config, id: string, def: AgentConfig): string[] {
  const findings = agentWindowFindings(cfg, {
    id,
    model: def.model,
    engine: def.engine,
    context_window: def.context_window,
    origin: { kind: "api" },
  });
  const bad = findings.find((f) => f.level === "error");
  if (bad)
    throw apiError(
      422,
      "context_window_too_small",
      `${bad.path}: ${bad.message}`,
      bad.model === def.model ? "model" : "context_window",
    );
  return findings.map((f) => `${f.path}: ${f.message}`);
}

/** The agent's JSON, with `warnings` when there are any. */
export function withWarnings(json: Record<string, unknown>, warnings: string[]): Record<string, unknown> {
  return warnings.length > 0 ? { ...json, warnings } : json;
}
