/**
 * The gateway's {@link SessionPost}: a scheduled job's reply goes into the chat session it was asked
 * in (the web chat, `familiar chat`) and to the connections showing that session, as the `reminder`
 * event.
 *
 * Invariants:
 * - the reply is stored in the session's transcript before any client is told, so a reload (or
 *   another device) shows it; it is stored through the session's turn queue, after a turn running
 *   there, never between a tool call and its result;
 * - the run's taint comes with the text: the receiving session is tainted in the commit that stores
 *   it when the run's session (or the job) was (docs/security.md, "Labels follow the data");
 * - only connections that show that session get the event (session-watchers.ts); a session that no
 *   longer exists is never created by a post (`kept: false`).
 */
import type { SessionPost, SessionPostMessage, SessionPostResult } from "../core/session-post.js";
import type { GatewayRuntime } from "./runtime.js";
import type { SessionWatchers } from "./session-watchers.js";

/** The `reminder` event a client showing the session receives. */
export interface ReminderEvent {
  sessionKey: string;
  jobId: string;
  text: string;
  /** The stored message's id (a client that reloads sees the same message in chat.history). */
  messageId: number;
  at: number;
}

/** Builds the post over the runtime's sessions and the live connections. */
export function createSessionPost(
  rt: GatewayRuntime,
  watchers: SessionWatchers,
  sendTo: (connId: number, event: string, payload: unknown) => boolean,
): SessionPost {
  const store = (m: SessionPostMessage): number | undefined => {
    const head = rt.sessions.head(m.sessionKey);
    if (!head) return undefined;
    const at = rt.ctx.clock.now();
    return rt.ctx.db.transaction(() => {
      const id = rt.sessions.append(head.id, { role: "assistant", content: m.text, status: "ok" });
      rt.deps.containment?.admitted(head.id, `cron-reply:${m.jobId}:${at}`, {
        channel: "cron",
        sessionKey: m.sessionKey,
        reads: { jobs: [m.jobId], sessionKeys: [m.runSessionKey] },
      });
      return id;
    })();
  };

  return {
    async post(m): Promise<SessionPostResult> {
      // A main-session job runs in this very session: its reply is stored there already and its
      // turn's events reached the clients showing it.
      if (m.runSessionKey === m.sessionKey) return { kept: true, live: watchers.of(m.sessionKey).length };
      const host = rt.maybeHost();
      const id = host ? await host.exclusive(m.sessionKey, () => store(m)) : store(m);
      if (id === undefined) return { kept: false, live: 0 };
      const event: ReminderEvent = {
        sessionKey: m.sessionKey,
        jobId: m.jobId,
        text: m.text,
        messageId: id,
        at: rt.ctx.clock.now(),
      };
      let live = 0;
      for (const conn of watchers.of(m.sessionKey)) if (sendTo(conn, "reminder", event)) live++;
      return { kept: true, live };
    },
  };
}
