/**
 * The stored rows of a session as the compactor sees them: model messages 1:1 with their row ids, so
 * a compaction can name exactly which rows it summarised (host-compactor.ts).
 */
import type { ChatMessage } from "../../models/types.js";
import type { StoredMessage } from "../../session/session-store.js";

/** Maps stored rows 1:1 to model messages (ids kept alongside), skipping rows the model never sees. */
export function storedForCompaction(rows: readonly StoredMessage[]): { msgs: ChatMessage[]; ids: number[] } {
  const msgs: ChatMessage[] = [];
  const ids: number[] = [];
  for (const r of rows) {
    let m: ChatMessage | undefined;
    if (r.role === "user") m = { role: "user", content: r.content };
    else if (r.role === "assistant" && r.status !== "error") {
      const calls = r.tool_calls
        ? (JSON.parse(r.tool_calls) as NonNullable<Extract<ChatMessage, { role: "assistant" }>["tool_calls"]>)
        : [];
      m =
        calls.length > 0
          ? { role: "assistant", content: r.content, tool_calls: calls }
          : { role: "assistant", content: r.content };
    } else if (r.role === "tool")
      m = {
        role: "tool",
        content: r.content,
        tool_call_id: r.tool_call_id ?? "",
        ...(r.tool_name ? { name: r.tool_name } : {}),
      };
    else if (r.role === "system") m = { role: "system", content: r.content };
    else if (r.role === "event") m = { role: "system", content: `[system event] ${r.content}` };
    if (m) {
      msgs.push(m);
      ids.push(r.id);
    }
  }
  return { msgs, ids };
}
