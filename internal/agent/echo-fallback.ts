/**
 * The `echo` agent: the last-resort answer when the agent a message is routed to cannot be built (the
 * default names an agent nobody defines, its model names a provider that is not configured, its
 * engine is not available). It answers without any model, and its reply says what is wrong, so a
 * broken definition is visible in the chat instead of as silence or a stack trace.
 *
 * Invariants:
 * - the fallback keeps the id of the agent that was wanted, so the turn is stored in that agent's
 *   session and answers normally again once the definition is fixed;
 * - it never calls a model or a tool and records no usage.
 */
import { agentSchema, type Config } from "../config/schema.js";
import { ZERO_USAGE, type ChatMessage } from "../models/types.js";
import { ECHO_PROVIDER, echoReply } from "../models/echo-model.js";
import type { AgentDef } from "./agents.js";
import type { AgentEvent } from "../core/agent-events.js";
import type { LoopOptions, LoopOutcome } from "./loop.js";

/** The id the echo agent answers as (in replies and logs). */
export const ECHO_AGENT_ID = "echo";
/** `source` of a fallback definition. */
export const ECHO_FALLBACK_SOURCE = "echo-fallback";

/**
 * Why an agent cannot be built, or undefined when it can. `engines` are the non-model engines that
 * exist; `modelOverride` (a session's `/model`) makes the agent's own model irrelevant.
 */
export function agentProblem(
  config: Config,
  agent: AgentDef,
  engines: Readonly<Record<string, unknown>> | undefined,
  modelOverride?: string,
): string | undefined {
  if (agent.enabled === false)
    return `it is disabled (${agent.source === "config" ? `agents.${agent.id}.enabled` : "enabled"}: false)`;
  if (agent.engine !== "model")
    return engines?.[agent.engine] ? undefined : `its engine "${agent.engine}" is not available`;
  const ref = modelOverride ?? agent.model;
  if (!ref) return undefined; // models.primary / the router's chain: checked by the router itself
  const provider = ref.slice(0, Math.max(0, ref.indexOf("/")));
  if (provider === ECHO_PROVIDER) return undefined;
  // With no provider at all the router answers with the echo model and says so loudly (router.ts).
  if (Object.keys(config.models.providers).length === 0) return undefined;
  if (!config.models.providers[provider])
    return `its model ${ref} names provider "${provider}", which is not configured under models.providers`;
  return undefined;
}

/** A stand-in definition for `wantedId`, answered by the echo agent. */
export function echoFallbackAgent(wantedId: string, isDefault: boolean, reason: string): AgentDef {
  const who = isDefault ? `The default agent "${wantedId}"` : `Agent "${wantedId}"`;
  return {
    ...agentSchema.parse({}),
    id: wantedId,
    source: ECHO_FALLBACK_SOURCE,
    description: `${who} cannot be built: ${reason}.`,
  };
}

export function isEchoFallback(agent: AgentDef): boolean {
  return agent.source === ECHO_FALLBACK_SOURCE;
}

/** The reply of the echo agent: what is wrong, then the user's words echoed back. */
export function echoFallbackText(agent: AgentDef, messages: readonly ChatMessage[]): string {
  return (
    `[${ECHO_AGENT_ID} agent] ${agent.description ?? `Agent "${agent.id}" cannot be built.`} ` +
    `Fix its definition; until then the ${ECHO_AGENT_ID} agent answers.\n\n${echoReply([...messages])}`
  );
}

/** The echo agent as an engine of the host: one text delta, no model call, no usage. */
export async function* echoFallbackEngine(
  opts: LoopOptions & { agent: AgentDef },
): AsyncGenerator<AgentEvent, LoopOutcome> {
  const text = echoFallbackText(opts.agent, opts.messages);
  yield { type: "notice", runId: opts.runId, kind: "echo_fallback", text: opts.agent.description ?? "" };
  yield { type: "text_delta", runId: opts.runId, delta: text };
  return {
    text,
    finishReason: "stop",
    usage: { ...ZERO_USAGE },
    model: `${ECHO_PROVIDER}/${ECHO_PROVIDER}`,
    iterations: 1,
  };
}
