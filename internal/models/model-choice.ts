/**
 * Checks a model someone picks for a chat (`/model`, the sessions API) against the config, so a typo
 * is refused with the list of what exists instead of being stored and then answered by something
 * else (before, `/model nosuch/x` was accepted and the echo model answered while `/status` showed
 * the pick).
 */
import type { Config } from "../config/schema.js";
import { ECHO_MODEL_REF, ECHO_PROVIDER } from "./echo-model.js";

/** `<provider>/<model>`; the model part may contain slashes (OpenRouter ids). */
const REF = /^[^/\s]+\/\S+$/;

/**
 * The models the config names for `provider`: its `models` catalogue plus every ref in
 * models.primary, models.fallbacks, models.pricing and the agents' `model` keys. Sorted.
 */
export function knownModels(cfg: Config, provider: string): string[] {
  const refs: string[] = [
    ...(cfg.models.primary ? [cfg.models.primary] : []),
    ...cfg.models.fallbacks,
    ...Object.keys(cfg.models.pricing),
    ...(cfg.agents.defaults.subagents.model ? [cfg.agents.defaults.subagents.model] : []),
  ];
  for (const [id, a] of Object.entries(cfg.agents))
    if (!["default", "max_concurrent", "defaults"].includes(id)) {
      const model = (a as { model?: unknown }).model;
      if (typeof model === "string") refs.push(model);
    }
  const out = new Set(Object.keys(cfg.models.providers[provider]?.models ?? {}));
  for (const r of refs) if (r.startsWith(`${provider}/`)) out.add(r.slice(provider.length + 1));
  return [...out].sort();
}

/** `openai (gpt-4o, gpt-4o-mini), local` */
export function describeProviders(cfg: Config): string {
  return Object.keys(cfg.models.providers)
    .sort()
    .map((p) => {
      const models = knownModels(cfg, p);
      return models.length > 0 ? `${p} (${models.join(", ")})` : p;
    })
    .join(", ");
}

/**
 * Why `ref` cannot be chosen, in words for the chat, or undefined when it can. A provider without a
 * `models` catalogue accepts any model name (only the provider can tell); with a catalogue, the
 * model must be in it or named elsewhere in the config.
 */
export function modelChoiceProblem(cfg: Config, ref: string): string | undefined {
  if (!REF.test(ref)) return "expected <provider>/<model>, e.g. openai/gpt-4o (or default)";
  const slash = ref.indexOf("/");
  const provider = ref.slice(0, slash);
  const model = ref.slice(slash + 1);
  const providers = Object.keys(cfg.models.providers);
  if (providers.length === 0)
    return ref === ECHO_MODEL_REF
      ? undefined
      : `no model provider is configured, so only the offline echo model (${ECHO_MODEL_REF}) can answer; ` +
          "add a provider under models.providers in config.yaml first";
  if (provider === ECHO_PROVIDER && !cfg.models.providers[ECHO_PROVIDER])
    return ref === ECHO_MODEL_REF ? undefined : `the echo provider has one model: ${ECHO_MODEL_REF}`;
  if (!cfg.models.providers[provider])
    return `unknown provider "${provider}"; configured: ${describeProviders(cfg)}`;
  const catalogue = Object.keys(cfg.models.providers[provider]?.models ?? {});
  if (catalogue.length === 0) return undefined;
  const known = knownModels(cfg, provider);
  if (known.includes(model)) return undefined;
  return (
    `unknown model "${model}" for provider "${provider}"; known: ${known.join(", ")} ` +
    `(add it under models.providers.${provider}.models to use it)`
  );
}
