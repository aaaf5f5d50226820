/**
 * Remembers which Discord message and interaction ids were already handled.
 *
 * Invariants:
 * - `claim(id)` returns true exactly once per id (within the retention window), across restarts:
 *   the id is written to SQLite before the message is answered, so a replay after RESUME or a
 *   restart is never answered twice;
 * - memory stays bounded: a small in-memory set fronts the table, and rows older than
 *   {@link SEEN_RETENTION_MS} are pruned (Discord never replays events that old).
 */
import type { Db } from "../../store/db.js";

export const SEEN_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
const MEMORY_LIMIT = 2000;
const PRUNE_EVERY = 500;

export class SeenStore {
  private recent = new Set<string>();
  private claims = 0;
  private q;

  constructor(
    db: Db,
    private now: () => number,
  ) {
    this.q = {
      insert: db.prepare("INSERT OR IGNORE INTO discord_seen (id, seen_at) VALUES (?, ?)"),
      prune: db.prepare("DELETE FROM discord_seen WHERE seen_at < ?"),
    };
  }

  /** Claims an id: true when it was not seen before (the caller handles it), false for a duplicate. */
  claim(id: string): boolean {
    if (this.recent.has(id)) return false;
    const fresh = this.q.insert.run(id, this.now()).changes > 0;
    this.recent.add(id);
    if (this.recent.size > MEMORY_LIMIT) {
      // Sets iterate in insertion order: drop the oldest half.
      let n = MEMORY_LIMIT / 2;
      for (const old of this.recent) {
        if (n-- <= 0) break;
        this.recent.delete(old);
      }
    }
    if (++this.claims % PRUNE_EVERY === 0) this.q.prune.run(this.now() - SEEN_RETENTION_MS);
    return fresh;
  }
}
