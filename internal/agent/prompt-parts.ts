/**
 * Where a model call's prompt went: the characters of the system prompt, the tool schemas, the earlier
 * history, the tool results and the new message, measured on the exact request the loop sends. The
 * console scales these shares to the call's real input tokens (the provider reports only the total),
 * so "where did the tokens go" is answered in proportion, labelled as an estimate.
 */
import type { ChatMessage, ToolSpec } from "../models/types.js";

export interface PromptParts {
  system: number;
  tools: number;
  history: number;
  tool_results: number;
  new_message: number;
}

const size = (c: unknown): number => (typeof c === "string" ? c.length : JSON.stringify(c ?? "").length);

/** Characters per part of one request (`messages` as sent, `specs` the tool schemas sent with it). */
export function promptParts(messages: readonly ChatMessage[], specs: readonly ToolSpec[]): PromptParts {
  const p: PromptParts = { system: 0, tools: 0, history: 0, tool_results: 0, new_message: 0 };
  if (specs.length > 0) p.tools = JSON.stringify(specs).length;
  // The new message: the last user message when nothing followed it yet (the first call of a turn).
  const last = messages.length - 1;
  messages.forEach((m, i) => {
    if (m.role === "system") p.system += size(m.content);
    else if (m.role === "tool") p.tool_results += size(m.content);
    else if (i === last && m.role === "user") p.new_message += size(m.content);
    else p.history += size(m.content) + (m.role === "assistant" && m.tool_calls ? size(m.tool_calls) : 0);
  });
  return p;
}
