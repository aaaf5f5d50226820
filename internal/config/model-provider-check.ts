/**
 * Model references must name a configured provider (issue 46): a `models.primary`, a fallback or an
 * agent's `model` whose provider is missing under `models.providers` used to pass `config check`,
 * and the daemon then answered with the offline echo model as if nothing were wrong. The schema's
 * cross-field pass reports each such key, so `config check`, the daemon's start and every hot
 * reload refuse the config the same way. The echo model (`echo/<model>`) needs no provider.
 */

/** The provider the built-in echo model answers as; it needs no entry under models.providers. */
const ECHO = "echo";

/** The parts of the config this check reads (the schema's output, before it is a `Config`). */
export interface ModelRefsInput {
  models: { providers: Record<string, unknown>; primary?: string | undefined; fallbacks: readonly string[] };
  agents: Record<string, unknown>;
}

/** A problem at a key path, as the schema's issues take it. */
export interface ModelRefProblem {
  path: (string | number)[];
  message: string;
}

/** One problem per model reference whose provider is not configured, with its key path. */
export function modelProviderProblems(c: ModelRefsInput): ModelRefProblem[] {
  const configured = Object.keys(c.models.providers);
  const refs: [(string | number)[], string][] = [];
  if (c.models.primary) refs.push([["models", "primary"], c.models.primary]);
  c.models.fallbacks.forEach((r, i) => refs.push([["models", "fallbacks", i], r]));
  for (const [id, a] of Object.entries(c.agents)) {
    if (id === "defaults" || a === null || typeof a !== "object") continue;
    const agent = a as { model?: unknown; engine?: unknown };
    // A CLI engine passes `model` to its program, which knows its own providers.
    if (typeof agent.model === "string" && (agent.engine ?? "model") === "model")
      refs.push([["agents", id, "model"], agent.model]);
  }
  const out: ModelRefProblem[] = [];
  for (const [path, ref] of refs) {
    // Not a <provider>/<model> at all: the field's own check reports it.
    if (ref.indexOf("/") <= 0) continue;
    const provider = ref.slice(0, ref.indexOf("/"));
    if (provider === ECHO || configured.includes(provider)) continue;
    out.push({
      path,
      // The formatter appends `, got "<the reference>"`.
      message: `provider "${provider}" is not configured: expected a provider from models.providers (${configured.length ? configured.join(", ") : "none configured"})`,
    });
  }
  return out;
}
