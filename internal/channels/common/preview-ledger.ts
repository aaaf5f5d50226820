/**
 * Remembers the preview message of every reply being streamed (SQLite), so a preview left behind
 * by a crash is cleaned up after the restart instead of lingering next to the resumed answer.
 *
 * Invariants:
 * - a row exists from the moment the preview message was sent until its turn's final delivery
 *   finished (or failed); `finalizing` is set, synchronously, as soon as the turn ended;
 * - rows written by this process run carry its boot id (run-ledger.ts) and are never treated as
 *   leftovers;
 * - a leftover is deleted on the platform only when it is certainly stale: its turn never reached
 *   `finalizing` and no final answer was stored in its session between the preview's creation and
 *   this boot. A turn interrupted mid-stream is resumed by the host and answered anew, so its
 *   partial preview would be a second, truncated copy of the answer; a preview whose answer was
 *   complete before the crash is left alone (it may carry that answer).
 */
import type { Db } from "../../store/db.js";
import { RunLedger } from "./run-ledger.js";

/** A preview message left by an earlier run. */
export interface LeftoverPreview {
  chat: string;
  messageId: string;
  /** True when it is safe to delete it (see the invariants). */
  stale: boolean;
  createdAt: number;
}

export class PreviewLedger extends RunLedger {
  private q;

  /**
   * @param bootAt when this process started (ctx.startedAt): answers stored before it belong to the
   *   earlier run; answers of turns resumed since then do not make a leftover preview current.
   */
  constructor(db: Db, channel: string, now: () => number, bootAt?: number) {
    super(channel, now, bootAt);
    this.q = {
      open: db.prepare(
        `INSERT OR REPLACE INTO chat_previews (channel, chat, message_id, session_key, boot, created_at, finalizing)
         VALUES (?, ?, ?, ?, ?, ?, 0)`,
      ),
      finalizing: db.prepare(
        "UPDATE chat_previews SET finalizing = 1 WHERE channel = ? AND chat = ? AND message_id = ?",
      ),
      close: db.prepare("DELETE FROM chat_previews WHERE channel = ? AND chat = ? AND message_id = ?"),
      leftovers: db.prepare<
        [string, string],
        {
          chat: string;
          message_id: string;
          session_key: string | null;
          created_at: number;
          finalizing: number;
        }
      >(
        "SELECT chat, message_id, session_key, created_at, finalizing FROM chat_previews WHERE channel = ? AND boot != ?",
      ),
      answered: db.prepare<[string, number, number], { n: number }>(
        `SELECT 1 AS n FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE s.key = ? AND m.role = 'assistant' AND m.tool_calls IS NULL AND m.created_at >= ? AND m.created_at < ?
         LIMIT 1`,
      ),
    };
  }

  opened(chat: string, messageId: string, sessionKey: string | undefined, at: number): void {
    this.q.open.run(this.channel, chat, messageId, sessionKey ?? null, this.boot, at);
  }

  finalizing(chat: string, messageId: string): void {
    this.q.finalizing.run(this.channel, chat, messageId);
  }

  closed(chat: string, messageId: string): void {
    this.q.close.run(this.channel, chat, messageId);
  }

  /** Previews of earlier runs, each with whether it is safe to delete. */
  leftovers(): LeftoverPreview[] {
    return this.q.leftovers.all(this.channel, this.boot).map((r) => ({
      chat: r.chat,
      messageId: r.message_id,
      createdAt: r.created_at,
      stale:
        r.finalizing === 0 &&
        (r.session_key === null ||
          this.q.answered.get(r.session_key, r.created_at, this.bootAt) === undefined),
    }));
  }
}
