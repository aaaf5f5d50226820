/**
 * Where a model call's prompt went: the characters of the system prompt, the tool schemas, the earlier
 * history, the tool results and the new message, measured on the exact request the loop sends. The
 * console scales these shares to the call's real input tokens (the provider reports only the total),
 * so "where did the tokens go" is answered in proportion, labelled as an estimate.
 */
import type { ChatMessage, ToolCall, ToolSpec } from "../models/types.js";

export interface PromptParts {
  system: number;
  tools: number;
  history: number;
  tool_results: number;
  new_message: number;
}

const size = (c: unknown): number => (typeof c === "string" ? c.length : JSON.stringify(c ?? "").length);

/** Characters of a tool-call list without serialising it again: names and arguments. */
const callsSize = (calls: readonly ToolCall[]): number =>
  calls.reduce((n, c) => n + c.name.length + c.arguments.length + 40, 0);

/** Schema characters per spec (the registry hands out the same spec objects until tools change). */
const specChars = new WeakMap<ToolSpec, number>();

/** Characters per part of one request (`messages` as sent, `specs` the tool schemas sent with it). */
export function promptParts(messages: readonly ChatMessage[], specs: readonly ToolSpec[]): PromptParts {
  const p: PromptParts = { system: 0, tools: 0, history: 0, tool_results: 0, new_message: 0 };
  for (const spec of specs) {
    let n = specChars.get(spec);
    if (n === undefined) specChars.set(spec, (n = JSON.stringify(spec).length + 1));
    p.tools += n;
  }
  // The new message: the last user message when nothing followed it yet (the first call of a turn).
  const last = messages.length - 1;
  messages.forEach((m, i) => {
    if (m.role === "system") p.system += size(m.content);
    else if (m.role === "tool") p.tool_results += size(m.content);
    else if (i === last && m.role === "user") p.new_message += size(m.content);
    else
      p.history += size(m.content) + (m.role === "assistant" && m.tool_calls ? callsSize(m.tool_calls) : 0);
  });
  return p;
}
