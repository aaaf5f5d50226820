/**
 * The in-memory cache of session messages behind `SessionStore.messages()`: its bounds, its size
 * estimate and the string sharing that keeps cached rows small (issue 26).
 */
import type { Db } from "../store/db.js";

/** The columns of a stored message the cache reads (session-store.ts's StoredMessage). */
export interface CacheRow {
  id: number;
  session_id: string;
  role: string;
  status: string;
  model: string | null;
  finish_reason: string | null;
  content: string;
  parts: string | null;
  tool_calls: string | null;
}

/**
 * Sessions whose messages stay cached (least recently read dropped first). Above the number of chats
 * a busy daemon serves at once (the load benchmark runs 100): a cache smaller than the working set
 * misses on every turn and reloads whole sessions. Memory stays bounded by MAX_CACHED_BYTES.
 */
export const MAX_CACHED_SESSIONS = 128;
/**
 * Estimated bytes of cached rows over all sessions; beyond this the least recently read go. Measured
 * with heap snapshots (issue 26): a row object with its small strings is ~250 bytes once the repeated
 * strings are shared (see `compact`), plus its text.
 */
export const MAX_CACHED_BYTES = 6_000_000;
const ROW_BYTES = 256;

export interface CachedMessages<R extends CacheRow = CacheRow> {
  rows: R[];
  lastId: number;
  /** Estimated bytes of `rows`: per-row overhead plus content, parts and tool calls. */
  chars: number;
}

/** Estimated bytes of `rows` in the cache. */
export function charsOf(rows: readonly CacheRow[]): number {
  let n = 0;
  for (const r of rows)
    n += ROW_BYTES + r.content.length + (r.parts?.length ?? 0) + (r.tool_calls?.length ?? 0);
  return n;
}

/** Shared copies of the few distinct short values rows repeat (role, status, model, finish reason). */
const interned = new Map<string, string>();
function intern<T extends string>(v: T): T {
  const hit = interned.get(v) as T | undefined;
  if (hit !== undefined) return hit;
  if (interned.size < 256) interned.set(v, v);
  return v;
}

/**
 * Rows about to be cached share their repeated strings: SQLite hands out a new string per column per
 * row, so 20,000 cached rows held 20,000 copies of the same session id, role and model (~150 bytes a
 * row). Same values, so callers see no difference.
 */
export function compact<R extends CacheRow>(rows: R[], sessionId: string): R[] {
  for (const r of rows) {
    r.session_id = sessionId;
    r.role = intern(r.role);
    r.status = intern(r.status);
    if (r.model !== null) r.model = intern(r.model);
    if (r.finish_reason !== null) r.finish_reason = intern(r.finish_reason);
  }
  return rows;
}

/** Per db: session id -> cached rows, in least-recently-read-first order (Map insertion order). */
const messageCaches = new WeakMap<Db, Map<string, CachedMessages>>();

/** The message cache of `db` (shared by every SessionStore of it). */
export function cacheOf<R extends CacheRow>(db: Db): Map<string, CachedMessages<R>> {
  let c = messageCaches.get(db);
  if (!c) {
    c = new Map();
    messageCaches.set(db, c);
  }
  // One row type per db: every SessionStore of a db stores the same StoredMessage rows.
  return c as Map<string, CachedMessages<R>>;
}
