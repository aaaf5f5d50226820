/**
 * What a provider says a call cost, beside its token counts: OpenRouter's `usage.cost` (USD, in the
 * usage object of every response), a LiteLLM proxy's `x-litellm-response-cost` header, and the
 * provider's id of the call for reconciling with its export. And, when a provider reports no counts at
 * all, the estimate made from the text sent and received (docs/costs.md, "Estimated").
 */
import type { CallBill, ChatMessage, ToolSpec, Usage } from "./types.js";
import { estimateTokens } from "./call-cost.js";

/** A finite, non-negative USD figure from a number or a numeric string, else undefined. */
function usd(v: unknown): number | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** The bill of a call: the provider's cost (usage object first, then the proxy header) and its id. */
export function billOf(
  rawUsage: unknown,
  costHeader: string | undefined,
  callId: string | undefined,
): CallBill {
  const inUsage =
    rawUsage && typeof rawUsage === "object" ? usd((rawUsage as { cost?: unknown }).cost) : undefined;
  const cost = inUsage ?? usd(costHeader);
  return { ...(cost !== undefined ? { cost } : {}), ...(callId ? { callId } : {}) };
}

/** Characters of the text a message carries (text parts of a multi-part message). */
export function messageChars(m: ChatMessage): number {
  if (typeof m.content === "string") {
    let n = m.content.length;
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) n += c.name.length + c.arguments.length;
    return n;
  }
  let n = 0;
  for (const p of m.content) if (p.type === "text") n += p.text.length;
  return n;
}

/**
 * Counts estimated for a call the provider reported none for: the prompt's text (messages and tool
 * specs) and the reply's text (answer, reasoning, tool calls), at 4 characters a token.
 */
export function estimatedUsage(
  req: { messages: readonly ChatMessage[]; tools?: readonly ToolSpec[] | undefined },
  replyChars: number,
): Usage {
  let chars = 0;
  for (const m of req.messages) chars += messageChars(m);
  if (req.tools && req.tools.length > 0) chars += JSON.stringify(req.tools).length;
  const input = estimateTokens(chars);
  const output = estimateTokens(replyChars);
  return { input, output, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: input + output };
}
