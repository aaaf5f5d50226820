/**
 * Projected cost of a model call before it is made: the prompt estimated at 4 characters a token
 * (the same rough rule as the compaction estimator) plus the reply, capped at the call's max_tokens
 * or 1,024 tokens, at the model's price or the default price.
 */
import type { Config } from "../config/schema.js";
import type { ChatMessage, ToolSpec } from "../models/types.js";
import type { Projection } from "./budget-guard.js";
import { knownPrice } from "./spend.js";

/** Expected reply tokens when the call sets no max_tokens (most replies are far shorter). */
export const EXPECTED_REPLY_TOKENS = 1024;

/** Projects one call of `modelRef` (the primary model when undefined). */
export function projectCall(
  cfg: Config,
  modelRef: string | undefined,
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[] = [],
  maxTokens?: number,
): Projection {
  let chars = 0;
  for (const m of messages)
    chars += typeof m.content === "string" ? m.content.length : JSON.stringify(m.content).length;
  if (tools.length > 0) chars += JSON.stringify(tools).length;
  const input = Math.ceil(chars / 4);
  const output = Math.min(maxTokens ?? EXPECTED_REPLY_TOKENS, EXPECTED_REPLY_TOKENS);
  const ref = modelRef ?? cfg.models.primary ?? "echo/echo";
  const slash = ref.indexOf("/");
  const provider = slash > 0 ? ref.slice(0, slash) : ref;
  const model = slash > 0 ? ref.slice(slash + 1) : ref;
  if (provider === "echo" || Object.keys(cfg.models.providers).length === 0)
    return { usd: 0, tokens: input + output };
  const p = knownPrice(cfg, provider, model) ?? cfg.budgets.default_price;
  return { usd: (input * p.input + output * p.output) / 1_000_000, tokens: input + output };
}
