/**
 * Client tools in a persistent `/v1` session (issue 34): the model's calls to the client's own
 * functions end a turn and are stored in the session as the assistant's tool calls; the client's
 * next request answers them (`tool` messages, `function_call_output` items) and the turn resumes.
 *
 * Invariants:
 * - a client's result is stored only as the `tool` result of a call the model made and nobody
 *   answered yet (a pending call); a result for any other id is refused with a 400 naming its field,
 *   so a client can never plant a result for a call that was not made, nor answer one twice;
 * - a request that answers pending calls answers all of them (as OpenAI's API requires);
 * - a new user message while calls are pending closes them with {@link CLOSED_NOTE} as their result,
 *   stored before the message, so the model knows the client never ran them (the answer carries the
 *   `X-Familiar-Closed-Tool-Calls` header naming them).
 */
import type { ClientToolCall } from "../core/client-request.js";
import type { EphemeralEntry } from "../core/host.js";
import type { SessionStore, StoredMessage } from "../session/session-store.js";
import { bad, type ClientResult } from "./openai-chat-request.js";

/** The result stored for a pending call that a new user message left unanswered. */
export const CLOSED_NOTE =
  "No result: the client did not run this call and sent a new message instead. Do not assume it ran.";

/** The calls of the session's latest assistant message that have no result yet. */
export function pendingInRows(rows: readonly StoredMessage[]): ClientToolCall[] {
  const answered = new Set<string>();
  for (let i = rows.length - 1; i >= 0; i--) {
    const m = rows[i]!;
    if (m.role === "tool") {
      if (m.tool_call_id) answered.add(m.tool_call_id);
      continue;
    }
    if (m.role !== "assistant" || !m.tool_calls || m.status === "error") return [];
    const calls = JSON.parse(m.tool_calls) as ClientToolCall[];
    return calls.filter((c) => !answered.has(c.id));
  }
  return [];
}

/** The pending calls of the live session of `key` (none when it has no session yet). */
export function pendingInSession(sessions: SessionStore, key: string): ClientToolCall[] {
  const head = sessions.head(key);
  if (!head) return [];
  // Every request of a persistent session asks, so the usual answer comes from the session row the
  // lookup above already read: `plain` means the newest row has no calls and is no tool result, and
  // pendingInRows finds calls only behind tool results or in an assistant message with calls.
  // Unknown (NULL: older sessions, compaction successors, imports) asks the newest row itself.
  if (head.tail_kind === "plain") return [];
  if (head.tail_kind === null) {
    const newest = sessions.newest(head.id);
    const mayPend =
      newest !== undefined &&
      (newest.role === "tool" ||
        (newest.role === "assistant" && newest.has_calls === 1 && newest.status !== "error"));
    if (!mayPend) return [];
  }
  return pendingInRows(sessions.messagesView(head.id));
}

/** The calls of the last assistant entry of a conversation that its later entries do not answer. */
export function pendingInEntries(entries: readonly EphemeralEntry[]): ClientToolCall[] {
  const answered = new Set<string>();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.role === "tool") answered.add(e.tool_call_id);
    else if (e.role === "assistant" && "tool_calls" in e)
      return e.tool_calls.filter((c) => !answered.has(c.id));
    else return [];
  }
  return [];
}

/**
 * The client's results as the tool entries to store, checked against the pending calls (see the
 * module invariants). `field` names the request field that carries them (`messages`, `input`).
 */
export function answerPending(
  pending: readonly ClientToolCall[],
  results: readonly ClientResult[],
  field: string,
): EphemeralEntry[] {
  const byId = new Map(pending.map((c) => [c.id, c]));
  const seen = new Set<string>();
  const out: EphemeralEntry[] = results.map((r) => {
    const call = byId.get(r.callId);
    if (!call)
      throw bad(
        pending.length === 0
          ? `${r.param}: no tool call is waiting for a result in this session, got ${JSON.stringify(r.callId)}`
          : `${r.param}: ${JSON.stringify(r.callId)} is not a pending tool call of this session (pending: ${pending.map((c) => c.id).join(", ")})`,
        r.param,
      );
    if (seen.has(r.callId)) throw bad(`${r.param}: a second result for ${r.callId}`, r.param);
    seen.add(r.callId);
    return { role: "tool", content: r.content, tool_call_id: call.id, name: call.name };
  });
  const missing = pending.filter((c) => !seen.has(c.id));
  if (missing.length > 0)
    throw bad(
      `${field}: the result of every pending tool call is needed; missing ${missing.map((c) => `${c.id} (${c.name})`).join(", ")}`,
      field,
    );
  return out;
}

/** Results that close unanswered calls (a new user message arrived instead). */
export function closePending(pending: readonly ClientToolCall[]): EphemeralEntry[] {
  return pending.map((c) => ({ role: "tool", content: CLOSED_NOTE, tool_call_id: c.id, name: c.name }));
}
