/**
 * Turns stored messages into the model's message list, repairing what a crash can leave behind:
 * an assistant tool-call message whose results were never stored gets "interrupted" results, so the
 * provider never sees an unpaired tool call.
 */
import type { ChatMessage, ContentPart, ToolCall } from "../models/types.js";
import type { StoredMessage } from "../session/session-store.js";

const INTERRUPTED = "Error: interrupted (the daemon stopped before this tool finished).";

/**
 * The conversion of {@link toChatMessages} one stored message at a time, so a long session's history
 * can be extended by the messages stored since instead of converted again (history-cache.ts).
 * Messages it produced are never changed afterwards; only calls still open at the end get their
 * "interrupted" results in {@link snapshot} (a later message may yet bring the real ones).
 */
export class ChatHistoryBuilder {
  /** Model messages so far, without results for calls still open. */
  readonly out: ChatMessage[] = [];
  private open: { ids: Set<string>; names: Map<string, string> } | undefined;

  /** Converts the next stored message (in turn order). */
  push(m: StoredMessage): void {
    const out = this.out;
    if (m.role === "tool") {
      const open = this.open;
      if (open && m.tool_call_id && open.ids.has(m.tool_call_id)) {
        open.ids.delete(m.tool_call_id);
        out.push({
          role: "tool",
          tool_call_id: m.tool_call_id,
          ...(m.tool_name ? { name: m.tool_name } : {}),
          content: m.content,
        });
        if (open.ids.size === 0) this.open = undefined;
      }
      return; // orphan tool results are dropped
    }
    this.closeOpen(out);
    switch (m.role) {
      case "user": {
        if (m.parts) {
          const parts = JSON.parse(m.parts) as ContentPart[];
          out.push({ role: "user", content: parts });
        } else out.push({ role: "user", content: m.content });
        break;
      }
      case "assistant": {
        if (m.status === "error") break;
        const calls = m.tool_calls ? (JSON.parse(m.tool_calls) as ToolCall[]) : [];
        if (calls.length > 0) {
          out.push({ role: "assistant", content: m.content, tool_calls: calls });
          this.open = {
            ids: new Set(calls.map((c) => c.id)),
            names: new Map(calls.map((c) => [c.id, c.name])),
          };
        } else if (m.content) {
          out.push({
            role: "assistant",
            content: m.status === "aborted" ? `${m.content}\n[interrupted]` : m.content,
          });
        }
        break;
      }
      case "system":
        out.push({ role: "system", content: m.content });
        break;
      case "event":
        out.push({ role: "system", content: `[system event] ${m.content}` });
        break;
    }
  }

  /** The model messages so far, calls still open closed as interrupted; a new array each call. */
  snapshot(): ChatMessage[] {
    const res = this.out.slice();
    if (this.open) for (const m of interrupted(this.open)) res.push(m);
    return res;
  }

  /** Ends the conversion: open calls get their interrupted results in `out` itself. */
  finish(): ChatMessage[] {
    this.closeOpen(this.out);
    return this.out;
  }

  private closeOpen(out: ChatMessage[]): void {
    if (!this.open) return;
    for (const m of interrupted(this.open)) out.push(m);
    this.open = undefined;
  }
}

function interrupted(open: { ids: Set<string>; names: Map<string, string> }): ChatMessage[] {
  const res: ChatMessage[] = [];
  for (const id of open.ids)
    res.push({ role: "tool", tool_call_id: id, name: open.names.get(id) ?? "tool", content: INTERRUPTED });
  return res;
}

export function toChatMessages(stored: readonly StoredMessage[]): ChatMessage[] {
  const b = new ChatHistoryBuilder();
  for (const m of stored) b.push(m);
  return b.finish();
}

/** The first message id of each request id, and whether a request's messages are interleaved. */
export function firstIds(stored: readonly StoredMessage[]): {
  first: Map<string, number>;
  outOfOrder: boolean;
} {
  const first = new Map<string, number>();
  let outOfOrder = false;
  let prev: string | null = null;
  for (const m of stored) {
    const key = m.request_id;
    if (key !== null && key !== prev) {
      if (first.has(key)) outOfOrder = true;
      else first.set(key, m.id);
    }
    prev = key;
  }
  return { first, outOfOrder };
}

/**
 * Orders stored messages by conversation turn and drops turns queued after `uptoId`.
 *
 * Why: a user message is committed the moment it arrives (nothing said is lost on kill -9), so while
 * a turn runs, later messages of the same session are already stored ahead of its reply. Messages of
 * one turn share a request id; each turn is placed at its first (user) message, and turns whose first
 * message comes after `uptoId` (the running turn's own message) are not yet visible to it.
 */
export function orderByTurn(
  stored: readonly StoredMessage[],
  uptoId?: number,
  ids: ReturnType<typeof firstIds> = firstIds(stored),
): StoredMessage[] {
  const { first, outOfOrder } = ids;
  const anchor = (m: StoredMessage): number =>
    m.request_id === null ? m.id : (first.get(m.request_id) ?? m.id);
  const visible =
    uptoId !== undefined && stored.some((m) => m.id === uptoId)
      ? stored.filter((m) => anchor(m) <= uptoId)
      : [...stored];
  // Common case (one message at a time): already in order, skip the sort.
  if (!outOfOrder) return visible;
  return visible.sort((a, b) => anchor(a) - anchor(b) || a.id - b.id);
}
