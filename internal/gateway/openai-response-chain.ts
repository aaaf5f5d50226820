/**
 * A `/v1/responses` chain is a Familiar session (issue 34): it is listed, compacted, tainted and
 * searched like any other. Which session a stored request (`store` not false) runs in:
 *
 * - no `previous_response_id`: the session named by `X-Familiar-Session` / `user` (as on
 *   `/v1/chat/completions`), else a new session `agent:<agent>:gateway:<response id>`;
 * - `previous_response_id` naming the latest response of its session (`v1_response_heads`), whose
 *   session is still the live one of its key (compactions followed), and that no other running
 *   request is already continuing: that session continues;
 * - any other `previous_response_id` (an older response: a branch; a session reset since; a response
 *   stored before sessions): a new session (a fork) seeded with that response's conversation, so the
 *   model sees exactly the conversation the client continues, never the newer turns of the original.
 *   The fork inherits the original session's taint.
 *
 * Function call outputs answer the pending calls of the session (or of the seeded conversation) and
 * resume the turn; a new user message closes pending calls (openai-pending-calls.ts).
 */
import type { ClientToolCall } from "../core/client-request.js";
import type { EphemeralEntry } from "../core/host.js";
import type { TaintInput } from "../core/taint.js";
import type { FrontDeskEntry, FrontDeskPort, SessionSpec } from "../inbound/front-desk.js";
import type { SessionStore } from "../session/session-store.js";
import type { ClientResult } from "./openai-chat-request.js";
import { answerPending, closePending, pendingInEntries, pendingInSession } from "./openai-pending-calls.js";
import type { ResponsesRequest } from "./openai-responses-request.js";
import type { ResponseStore, StoredResponse } from "./openai-responses-store.js";

/** How a stored request runs (see the module comment). */
export interface ChainPlan {
  mode: "new" | "named" | "continue" | "fork";
  session: SessionSpec;
  /** The idempotency scope's session part when the session name is new per request. */
  scopeKey?: string;
  /** Inherited taint of a fork. */
  taint?: TaintInput[];
  /** Completes the entry at admission (reads the session's pending calls; may throw a 400). */
  prepare(entry: FrontDeskEntry): FrontDeskEntry;
  /** Ids of pending calls a new user message closed (set by `prepare`). */
  closed: string[];
}

export interface ChainInput {
  sessions: SessionStore;
  store: ResponseStore;
  desk: FrontDeskPort;
  p: ResponsesRequest;
  prev?: StoredResponse;
  /** The session name of `X-Familiar-Session` / `user`, if any. */
  named?: string;
  /** The name of a new session (the new response's id). */
  newName: string;
  /**
   * Responses a running request continues from: a second follow-up from the same response while the
   * first runs is a branch (its session will hold the first one's turn), so it forks.
   */
  running: ReadonlySet<string>;
  /** Taint sources of a session id (containment), for forks. */
  taintOf?: (sessionId: string) => readonly { kind: string; detail: string }[];
}

/** True when `prev` is the latest response of its session and that session is still live. */
function isLatest(sessions: SessionStore, store: ResponseStore, prev: StoredResponse): boolean {
  if (!prev.sessionKey) return false;
  const h = store.head(prev.sessionKey);
  if (h?.responseId !== prev.id) return false;
  let s = sessions.get(h.sessionId);
  for (let hops = 0; s?.successor_id && hops < 1000; hops++) s = sessions.get(s.successor_id);
  return s !== undefined && s.id === sessions.head(prev.sessionKey)?.id;
}

/** Plans the session of a stored request (see the module comment). */
export function planChain(c: ChainInput): ChainPlan {
  const { prev, p } = c;
  let mode: ChainPlan["mode"];
  let session: SessionSpec;
  if (prev && !c.running.has(prev.id) && isLatest(c.sessions, c.store, prev)) {
    mode = "continue";
    session = { key: prev.sessionKey! };
  } else if (prev) {
    mode = "fork";
    session = { gateway: c.newName };
  } else if (c.named !== undefined) {
    mode = "named";
    session = { gateway: c.named };
  } else {
    mode = "new";
    session = { gateway: c.newName };
  }
  let taint: TaintInput[] | undefined;
  if (mode === "fork" && prev?.sessionKey && c.taintOf) {
    const live = c.sessions.head(prev.sessionKey);
    const sources = live ? c.taintOf(live.id) : [];
    if (sources.length)
      taint = sources.slice(0, 20).map((s) => ({
        kind: "inherited" as const,
        detail: `forked from ${prev.id}: ${s.kind} ${s.detail}`,
      }));
  }
  const base = mode === "fork" ? (prev?.conversation ?? []) : [];
  const plan: ChainPlan = {
    mode,
    session,
    // By the response continued, not the session: a repeat finds its first attempt whichever way
    // the chain was planned then (the first attempt may have been the one continuing).
    ...(mode !== "named" ? { scopeKey: `chain:${prev?.id ?? "new"}` } : {}),
    ...(taint ? { taint } : {}),
    closed: [],
    prepare: (entry) => {
      const inSession = mode === "continue" || mode === "named";
      const sessionPending = inSession ? pendingInSession(c.sessions, c.desk.route(entry).sessionKey) : [];
      let history: EphemeralEntry[] = [...base, ...p.entries];
      let tail = history.length;
      while (p.continue && tail > 0 && history[tail - 1]?.role === "tool") tail--;
      const results = history.slice(tail);
      // A named session is the history, as on chat completions: clients that send the whole
      // conversation each time (the Vercel AI SDK) must not store it again.
      history = mode === "named" ? [] : history.slice(0, tail);
      // Calls the client sends back along with their outputs are the session's own: not stored twice.
      const ids = new Set(sessionPending.map((x) => x.id));
      if (inSession)
        history = history.filter(
          (e) => !(e.role === "assistant" && "tool_calls" in e && e.tool_calls.every((x) => ids.has(x.id))),
        );
      const pending: ClientToolCall[] = history.length ? pendingInEntries(history) : sessionPending;
      const closeFirst = history.length && sessionPending.length ? closePending(sessionPending) : [];
      if (p.continue) {
        const answers: ClientResult[] = results.map((r) => ({
          callId: r.role === "tool" ? r.tool_call_id : "",
          content: r.content,
          param: p.outputParams.get(r) ?? "input",
        }));
        const prelude = [...closeFirst, ...history, ...answerPending(pending, answers, "input")];
        return { ...entry, stored: { prelude, continue: true } };
      }
      plan.closed = [...closeFirst, ...closePending(pending)].map((e) =>
        e.role === "tool" ? e.tool_call_id : "",
      );
      const prelude = [...closeFirst, ...history, ...closePending(pending)];
      return prelude.length ? { ...entry, stored: { prelude } } : entry;
    },
  };
  return plan;
}
