/**
 * Parser for Claude Code's `--output-format stream-json` lines. Returns undefined for lines that are
 * not JSON objects (malformed lines are logged and skipped by the engine).
 */
export type ClaudeLine =
  | { kind: "init"; sessionId?: string; model?: string; tools?: string[] }
  | { kind: "partial_text"; text: string; sessionId?: string }
  | { kind: "partial_thinking"; text: string; sessionId?: string }
  | {
      kind: "assistant";
      text: string;
      thinking: string;
      toolUses: { id: string; name: string; input: unknown }[];
      sessionId?: string;
    }
  | {
      kind: "tool_result";
      results: { id: string; name?: string; content: string; isError: boolean }[];
      sessionId?: string;
    }
  | {
      kind: "result";
      text?: string;
      isError: boolean;
      subtype?: string;
      usage?: unknown;
      costUsd?: number;
      numTurns?: number;
      model?: string;
      sessionId?: string;
    }
  | { kind: "other"; sessionId?: string };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

export function parseClaudeLine(line: string): ClaudeLine | undefined {
  const trimmed = line.trim();
  if (!trimmed) return undefined;
  let o: unknown;
  try {
    o = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (!isObj(o) || typeof o.type !== "string") return undefined;
  const sessionId = str(o.session_id);
  const sid = sessionId ? { sessionId } : {};
  switch (o.type) {
    case "system": {
      if (o.subtype !== "init") return { kind: "other", ...sid };
      const model = str(o.model);
      const tools = Array.isArray(o.tools)
        ? o.tools.filter((t): t is string => typeof t === "string")
        : undefined;
      return { kind: "init", ...sid, ...(model ? { model } : {}), ...(tools ? { tools } : {}) };
    }
    case "stream_event": {
      const ev = isObj(o.event) ? o.event : undefined;
      const delta = ev && isObj(ev.delta) ? ev.delta : undefined;
      if (ev?.type === "content_block_delta" && delta) {
        if (delta.type === "text_delta" && typeof delta.text === "string")
          return { kind: "partial_text", text: delta.text, ...sid };
        if (delta.type === "thinking_delta" && typeof delta.thinking === "string")
          return { kind: "partial_thinking", text: delta.thinking, ...sid };
      }
      return { kind: "other", ...sid };
    }
    case "assistant": {
      const msg = isObj(o.message) ? o.message : {};
      const content = Array.isArray(msg.content) ? msg.content.filter(isObj) : [];
      let text = "";
      let thinking = "";
      const toolUses: { id: string; name: string; input: unknown }[] = [];
      for (const c of content) {
        if (c.type === "text" && typeof c.text === "string") text += c.text;
        else if (c.type === "thinking" && typeof c.thinking === "string") thinking += c.thinking;
        else if (c.type === "tool_use")
          toolUses.push({ id: str(c.id) ?? "", name: str(c.name) ?? "tool", input: c.input });
      }
      return { kind: "assistant", text, thinking, toolUses, ...sid };
    }
    case "user": {
      const msg = isObj(o.message) ? o.message : {};
      const content = Array.isArray(msg.content) ? msg.content.filter(isObj) : [];
      const results = content
        .filter((c) => c.type === "tool_result")
        .map((c) => ({
          id: str(c.tool_use_id) ?? "",
          content: typeof c.content === "string" ? c.content : JSON.stringify(c.content ?? ""),
          isError: c.is_error === true,
        }));
      return results.length > 0 ? { kind: "tool_result", results, ...sid } : { kind: "other", ...sid };
    }
    case "result": {
      const text = str(o.result);
      const subtype = str(o.subtype);
      const model = isObj(o.modelUsage) ? Object.keys(o.modelUsage)[0] : undefined;
      return {
        kind: "result",
        isError: o.is_error === true || (subtype !== undefined && subtype !== "success"),
        ...(text !== undefined ? { text } : {}),
        ...(subtype ? { subtype } : {}),
        ...(o.usage !== undefined ? { usage: o.usage } : {}),
        ...(typeof o.total_cost_usd === "number" ? { costUsd: o.total_cost_usd } : {}),
        ...(typeof o.num_turns === "number" ? { numTurns: o.num_turns } : {}),
        ...(model ? { model } : {}),
        ...sid,
      };
    }
    default:
      return { kind: "other", ...sid };
  }
}
