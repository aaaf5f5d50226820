/**
 * Exactly-once bookkeeping for Telegram updates (SQLite, namespace `telegram`).
 *
 * Invariants:
 * - `receive` stores a batch of updates and advances the offset in ONE transaction, so an update is
 *   either stored (and will be handled) or the offset still points at it (Telegram sends it again);
 * - an update id is stored once (`INSERT OR IGNORE`): a redelivered update is never handled twice;
 * - `markHandled` is called once the update was dispatched (the user message is committed by the
 *   host); updates stored but not handled are handled after a restart.
 */
import type { Db } from "../../store/db.js";

export interface StoredUpdate {
  updateId: number;
  payload: unknown;
}

export class UpdateStore {
  private q;

  constructor(
    private db: Db,
    readonly botId: string,
    private now: () => number,
  ) {
    this.q = {
      offset: db.prepare<[string], { next_offset: number }>(
        "SELECT next_offset FROM telegram_state WHERE bot_id = ?",
      ),
      setOffset: db.prepare(
        `INSERT INTO telegram_state (bot_id, next_offset, updated_at) VALUES (?, ?, ?)
         ON CONFLICT(bot_id) DO UPDATE SET next_offset = MAX(next_offset, excluded.next_offset), updated_at = excluded.updated_at`,
      ),
      insert: db.prepare(
        "INSERT OR IGNORE INTO telegram_updates (bot_id, update_id, payload, received_at) VALUES (?, ?, ?, ?)",
      ),
      pending: db.prepare<[string], { update_id: number; payload: string }>(
        "SELECT update_id, payload FROM telegram_updates WHERE bot_id = ? AND handled_at IS NULL ORDER BY update_id",
      ),
      handled: db.prepare(
        "UPDATE telegram_updates SET handled_at = ? WHERE bot_id = ? AND update_id = ? AND handled_at IS NULL",
      ),
      prune: db.prepare(
        "DELETE FROM telegram_updates WHERE bot_id = ? AND handled_at IS NOT NULL AND handled_at < ?",
      ),
    };
  }

  /** The offset to ask Telegram for (0 = from the oldest unconfirmed update). */
  offset(): number {
    return this.q.offset.get(this.botId)?.next_offset ?? 0;
  }

  /** Stores updates and advances the offset past them, atomically. Returns the ids newly stored. */
  receive(updates: readonly { update_id: number }[]): number[] {
    if (updates.length === 0) return [];
    const at = this.now();
    const run = this.db.transaction(() => {
      const fresh: number[] = [];
      let max = -1;
      for (const u of updates) {
        if (this.q.insert.run(this.botId, u.update_id, JSON.stringify(u), at).changes > 0)
          fresh.push(u.update_id);
        max = Math.max(max, u.update_id);
      }
      this.q.setOffset.run(this.botId, max + 1, at);
      return fresh;
    });
    return run();
  }

  /** Stored updates not yet handled, oldest first. */
  pending(): StoredUpdate[] {
    return this.q.pending
      .all(this.botId)
      .map((r) => ({ updateId: r.update_id, payload: JSON.parse(r.payload) as unknown }));
  }

  markHandled(updateId: number): void {
    this.q.handled.run(this.now(), this.botId, updateId);
  }

  /** Drops handled updates older than `maxAgeMs` (their ids stay covered by the offset). */
  prune(maxAgeMs: number): void {
    this.q.prune.run(this.botId, this.now() - maxAgeMs);
  }
}
