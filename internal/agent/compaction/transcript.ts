/**
 * Renders messages as plain transcript text for the summariser, stripping tool-result details
 * (DEC-051): tool output is reduced to its head and size, since what matters is what it established,
 * and a raw dump would crowd the identifiers out of the chunk budget.
 */
import type { ChatMessage } from "../../models/types.js";
import { SUMMARY_MARKER } from "./prompts.js";

/** Characters of a tool result kept when `observationMask` is on / off. */
export const TOOL_RESULT_HEAD_MASKED = 400;
export const TOOL_RESULT_HEAD_RAW = 4000;
/** Tool-call arguments longer than this are cut (they are usually short and full of identifiers). */
const ARGS_MAX = 1500;

function cut(text: string, max: number, what: string): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[... ${text.length - max} more characters of ${what} omitted]`;
}

function contentText(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  return content.map((p) => (p.type === "text" ? p.text : "[image]")).join("\n");
}

/** One transcript block per message, in order. */
export function renderMessage(m: ChatMessage, observationMask: boolean): string {
  switch (m.role) {
    case "system":
      return m.content.startsWith(SUMMARY_MARKER)
        ? `[summary of an even earlier part]\n${m.content.slice(SUMMARY_MARKER.length).trim()}`
        : `[system note] ${m.content}`;
    case "user":
      return `[user] ${contentText(m.content)}`;
    case "assistant": {
      const lines: string[] = [];
      if (m.content) lines.push(`[assistant] ${m.content}`);
      for (const c of m.tool_calls ?? [])
        lines.push(`[assistant called ${c.name}] ${cut(c.arguments, ARGS_MAX, "arguments")}`);
      return lines.join("\n") || "[assistant] (no text)";
    }
    case "tool":
      return `[result of ${m.name ?? "tool"}] ${cut(
        m.content,
        observationMask ? TOOL_RESULT_HEAD_MASKED : TOOL_RESULT_HEAD_RAW,
        "tool output",
      )}`;
  }
}
