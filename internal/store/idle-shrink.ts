/**
 * Checkpoints the WAL and gives SQLite's page cache back when the daemon goes quiet after a burst of
 * writes.
 *
 * Why: under load the connection's page cache fills to `cache_size` and stays full afterwards; a
 * daemon that answered a burst at noon would hold it all day. `PRAGMA shrink_memory` frees the cache
 * (the pages are re-read from the file or the OS page cache when next needed). The WAL is copied
 * back into the database first (a PASSIVE checkpoint: it never waits for a reader), because the
 * store's own automatic checkpoint only runs every `WAL_AUTOCHECKPOINT_PAGES` (db.ts): a quiet
 * daemon should not keep a large WAL, which every read consults and a restart after a crash replays.
 * It runs once per quiet spell: when a check finds no writes since the previous check, and there
 * were writes before it. Reads do not count: they keep only what they use within the cache bound.
 *
 * The same quiet spell also drops the caches above the store (`onQuiet`: the session message cache),
 * so the V8 heap they held can come back too: an idle daemon keeps nothing a turn can rebuild. The
 * price: a chat paced by a human usually pauses longer than one check, so its next turn re-reads its
 * rows from SQLite: 11-19 ms for a 10,000-message session (`npm run bench -- --only store`, the cold
 * context load), next to a model call of seconds.
 * Under load nothing is dropped: every check sees writes.
 */
import type { Db } from "./db.js";

export interface IdleShrink {
  /** One check; true when it shrank. The daemon calls it on a timer, tests call it directly. */
  check(): boolean;
  /** Stops the timer, if one was started. */
  stop(): void;
}

/**
 * Checks every `everyMs` (default 5 s; the timer never keeps the process alive; 0: no timer).
 * `onQuiet` runs with each shrink; it must only drop what can be rebuilt from the database.
 */
export function startIdleShrink(db: Db, everyMs = 5_000, onQuiet?: () => void): IdleShrink {
  const changes = db.prepare<[], { n: number }>("SELECT total_changes() AS n");
  let last = changes.get()?.n ?? 0;
  let dirty = false;
  const check = (): boolean => {
    const now = changes.get()?.n ?? 0;
    if (now !== last) {
      last = now;
      dirty = true;
      return false;
    }
    if (!dirty) return false;
    dirty = false;
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
    } catch {
      // A checkpoint that cannot run now (another process busy, a read-only disk) runs at the next
      // quiet spell or automatically; nothing is lost, the WAL holds every commit.
    }
    db.pragma("shrink_memory");
    onQuiet?.();
    return true;
  };
  const timer = everyMs > 0 ? setInterval(check, everyMs) : undefined;
  timer?.unref();
  return {
    check,
    stop: () => {
      if (timer) clearInterval(timer);
    },
  };
}
