/**
 * Models the config uses that have no price in `models.pricing`: their calls count at
 * `budgets.default_price`. Reported at start, on reload and by `familiar doctor`.
 */
import type { Config } from "../config/schema.js";
import { knownPrice } from "./spend.js";

/** Every `<provider>/<model>` the config can call: primary, fallbacks, agents, background models. */
export function configuredModels(cfg: Config): string[] {
  const refs: (string | undefined)[] = [
    cfg.models.primary,
    ...cfg.models.fallbacks,
    cfg.heartbeat.model,
    cfg.agents.defaults.compact.summary_model,
    cfg.agents.defaults.subagents.model,
    ...cfg.cron.jobs.map((j) => j.model),
  ];
  for (const [id, a] of Object.entries(cfg.agents)) {
    if (id === "default" || id === "max_concurrent" || id === "defaults") continue;
    const agent = a as { model?: string; compact?: { summary_model?: string } };
    refs.push(agent.model, agent.compact?.summary_model);
  }
  return [...new Set(refs.filter((r): r is string => typeof r === "string" && r.includes("/")))];
}

/** The configured models without a price (the offline echo model is free and never listed). */
export function unpricedModels(cfg: Config): string[] {
  if (Object.keys(cfg.models.providers).length === 0) return [];
  return configuredModels(cfg).filter((ref) => {
    const i = ref.indexOf("/");
    const provider = ref.slice(0, i);
    return provider !== "echo" && knownPrice(cfg, provider, ref.slice(i + 1)) === null;
  });
}

/** The warning line for unpriced models, or undefined when every model has a price. */
export function unpricedWarning(cfg: Config): string | undefined {
  const refs = unpricedModels(cfg);
  if (refs.length === 0) return undefined;
  const p = cfg.budgets.default_price;
  return (
    `no price for ${refs.join(", ")} in models.pricing: their calls count at the default price ` +
    `($${p.input} input / $${p.output} output per 1M tokens, budgets.default_price). ` +
    `Add models.pricing entries (0 for local models) so budgets and usage are right.`
  );
}
