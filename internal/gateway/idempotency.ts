import type { Db } from "../store/db.js";

/**
 * Remembers the first answer to an idempotency key so a retried request (a reconnecting client, a
 * double click) returns it instead of running a second turn. Bounded by size and age.
 */
export class IdempotencyCache<T> {
  private entries = new Map<string, { at: number; value: T }>();
  constructor(
    private now: () => number,
    private ttlMs = 15 * 60_000,
    private max = 5000,
  ) {}

  get(key: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.now() - e.at > this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  set(key: string, value: T): void {
    this.entries.delete(key);
    this.entries.set(key, { at: this.now(), value });
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }
}

/**
 * The cache key of an idempotency key: keys are scoped per session, so the same key sent to another
 * session is a new request (clients such as `familiar chat` pick keys per line, not globally unique).
 * JSON keeps the pair unambiguous whatever characters either part holds.
 */
export function scopedIdempotencyKey(sessionKey: string, key: string): string {
  return JSON.stringify([sessionKey, key]);
}

/** What survives a restart for one idempotency key: the run, and its answer once it ended. */
export interface PersistedSend {
  runId: string;
  /** The turn's request id: a turn resumed after a crash keeps it, so its answer can be found. */
  requestId?: string;
  sessionKey: string;
  /** The compact result (summarizeResult) once the turn ended; absent while it runs. */
  result?: Record<string, unknown>;
  /** Set when the key belonged to a slash command (its answer is `result`). */
  command?: string;
}

const KV_PREFIX = "gw_idem:";

/**
 * The on-disk side of chat.send idempotency (core `kv` table, one row per session and key), so a client that retries after a daemon
 * restart (kill -9 included) gets the first answer instead of a second turn. Entries older than
 * `ttlMs` are ignored and pruned now and then.
 */
export class PersistedIdempotency {
  private get;
  private put;
  private prune;
  private writes = 0;

  constructor(
    db: Db,
    private now: () => number,
    private ttlMs = 24 * 60 * 60_000,
  ) {
    this.get = db.prepare<[string], { value: string; updated_at: number }>(
      "SELECT value, updated_at FROM kv WHERE key = ?",
    );
    this.put = db.prepare(
      "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    );
    this.prune = db.prepare("DELETE FROM kv WHERE key >= ? AND key < ? AND updated_at < ?");
  }

  /**
   * The entry for `key` in `sessionKey`. An entry written before keys were scoped (stored under the
   * bare key) still counts, but only for the session it was sent to.
   */
  load(sessionKey: string, key: string): PersistedSend | undefined {
    const scoped = this.read(KV_PREFIX + scopedIdempotencyKey(sessionKey, key));
    if (scoped) return scoped;
    const legacy = this.read(KV_PREFIX + key);
    return legacy?.sessionKey === sessionKey ? legacy : undefined;
  }

  save(sessionKey: string, key: string, entry: PersistedSend): void {
    this.put.run(KV_PREFIX + scopedIdempotencyKey(sessionKey, key), JSON.stringify(entry), this.now());
    if (++this.writes % 200 === 0)
      this.prune.run(KV_PREFIX, KV_PREFIX.slice(0, -1) + ";", this.now() - this.ttlMs);
  }

  private read(kvKey: string): PersistedSend | undefined {
    const row = this.get.get(kvKey);
    if (!row || this.now() - row.updated_at > this.ttlMs) return undefined;
    try {
      return JSON.parse(row.value) as PersistedSend;
    } catch {
      return undefined;
    }
  }
}
