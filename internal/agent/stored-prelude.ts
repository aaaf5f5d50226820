/**
 * The messages a persistent turn stores before its user message (`InboundMessage.stored`): the
 * earlier conversation of a forked `/v1/responses` chain, and an API client's results for the
 * model's calls to the client's own functions (issue 34).
 *
 * Invariant: only the trailing run of `tool` rows (the results that answer the session's pending
 * calls) carries the turn's request id; every earlier row carries none. A turn's rows sort by the id
 * of their request's first row (history.ts `orderByTurn`), so the request's first row must be the
 * one just before its user message: rows of a seeded conversation keep their own order before it.
 */
import type { EphemeralEntry, InboundMessage } from "../core/host.js";
import type { NewMessage, SessionStore } from "../session/session-store.js";
import { toParts } from "./turn-setup.js";

function toNew(e: EphemeralEntry, requestId: string | undefined): NewMessage {
  const id = requestId !== undefined ? { requestId } : {};
  if (e.role === "tool")
    return { role: "tool", content: e.content, toolCallId: e.tool_call_id, toolName: e.name ?? "", ...id };
  if (e.role === "assistant" && "tool_calls" in e)
    return { role: "assistant", content: e.content, toolCalls: e.tool_calls, ...id };
  return { role: e.role, content: e.content, ...id };
}

/**
 * Appends `prelude` to the session (inside the caller's transaction) and returns the id of the first
 * row of the trailing tool results, the turn's anchor, or undefined when the prelude ends otherwise.
 */
export function appendPrelude(
  sessions: SessionStore,
  sessionId: string,
  prelude: readonly EphemeralEntry[],
  requestId: string,
): number | undefined {
  let tail = prelude.length;
  while (tail > 0 && prelude[tail - 1]?.role === "tool") tail--;
  let anchor: number | undefined;
  prelude.forEach((e, i) => {
    const id = sessions.append(sessionId, toNew(e, i >= tail ? requestId : undefined));
    if (i === tail) anchor = id;
  });
  return anchor;
}

/**
 * Stores a persistent turn's input (inside the caller's transaction): the prelude, then the user
 * message unless the turn continues after tool results. Returns the turn's anchor row id: the first
 * trailing tool result, else the user message.
 */
export function appendInbound(
  sessions: SessionStore,
  sessionId: string,
  msg: InboundMessage,
  requestId: string,
): number {
  const anchor = msg.stored ? appendPrelude(sessions, sessionId, msg.stored.prelude, requestId) : undefined;
  if (msg.stored?.continue && anchor !== undefined) return anchor;
  const parts = msg.images?.length ? toParts(msg.text, msg.images) : undefined;
  const id = sessions.append(sessionId, {
    role: msg.systemEvent ? "event" : "user",
    content: msg.text,
    ...(parts ? { parts } : {}),
    requestId,
  });
  return anchor ?? id;
}
