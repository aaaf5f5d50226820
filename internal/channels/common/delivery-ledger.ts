/**
 * Remembers every chat turn whose final answer has not reached the chat yet (SQLite), so an answer
 * that was stored but not delivered when the process died (kill -9 between the commit and the
 * platform's reply) is sent after the restart instead of being lost.
 *
 * Invariants:
 * - a row is written in the same transaction as the user message (`InboundMessage.onAccepted`), and
 *   removed once the turn's final delivery finished or finally failed; so after a crash every turn
 *   whose delivery may not have happened has a row;
 * - rows written by this process run carry its boot id (run-ledger.ts) and are never treated as
 *   leftovers;
 * - a leftover is re-sent only when its final answer was stored before this boot (`ok` or `error`;
 *   an aborted turn is not re-sent): an answer stored since belongs to a turn the host resumed after
 *   the restart, which delivers it itself. A leftover without such an answer is only removed (the
 *   host resumes interrupted turns and answers them through the session's origin).
 * The remaining risk is the instant between the platform accepting the final message and the row's
 * removal: a crash exactly there sends the answer twice, which is preferred to losing it.
 */
import type { Db } from "../../store/db.js";
import { RunLedger } from "./run-ledger.js";

/** An answer of an earlier run that may never have reached its chat. */
export interface PendingAnswer {
  requestId: string;
  chat: string;
  text: string;
  /** When the turn was accepted (its preview, if any, is not older). */
  acceptedAt: number;
}

export class DeliveryLedger extends RunLedger {
  private q;

  /** @param bootAt when this process started (ctx.startedAt). */
  constructor(db: Db, channel: string, now: () => number, bootAt?: number) {
    super(channel, now, bootAt);
    this.q = {
      open: db.prepare(
        `INSERT OR REPLACE INTO chat_deliveries (channel, request_id, chat, session_key, boot, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      close: db.prepare("DELETE FROM chat_deliveries WHERE channel = ? AND request_id = ?"),
      leftovers: db.prepare<
        [string, string],
        { request_id: string; chat: string; session_key: string; created_at: number }
      >(
        "SELECT request_id, chat, session_key, created_at FROM chat_deliveries WHERE channel = ? AND boot != ? ORDER BY created_at",
      ),
      answer: db.prepare<[string, string, number], { content: string; status: string }>(
        `SELECT m.content, m.status FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE s.key = ? AND m.request_id = ? AND m.role = 'assistant' AND m.tool_calls IS NULL
           AND m.created_at < ?
         ORDER BY m.id DESC LIMIT 1`,
      ),
    };
  }

  /** A turn for `chat` was accepted (call inside the transaction that stores its user message). */
  opened(requestId: string, chat: string, sessionKey: string): void {
    this.q.open.run(this.channel, requestId, chat, sessionKey, this.boot, this.now());
  }

  /** The turn's final delivery finished (or finally failed). */
  closed(requestId: string): void {
    this.q.close.run(this.channel, requestId);
  }

  /**
   * Answers of earlier runs to send again, oldest first; each stays recorded until `closed` (so a
   * crash while re-sending re-sends it once more). Leftovers with nothing to send are removed.
   */
  pending(): PendingAnswer[] {
    const out: PendingAnswer[] = [];
    for (const r of this.q.leftovers.all(this.channel, this.boot)) {
      const a = this.q.answer.get(r.session_key, r.request_id, this.bootAt);
      if (a && (a.status === "ok" || a.status === "error") && a.content.trim())
        out.push({ requestId: r.request_id, chat: r.chat, text: a.content, acceptedAt: r.created_at });
      else this.closed(r.request_id);
    }
    return out;
  }
}
