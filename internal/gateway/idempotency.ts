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

/** What survives a restart for one idempotency key: the run, and its answer once it ended. */
export interface PersistedSend {
  runId: string;
  /** The turn's request id: a turn resumed after a crash keeps it, so its answer can be found. */
  requestId?: string;
  sessionKey: string;
  /** The compact result (summarizeResult) once the turn ended; absent while it runs. */
  result?: Record<string, unknown>;
}

const KV_PREFIX = "gw_idem:";

/**
 * The on-disk side of chat.send idempotency (core `kv` table), so a client that retries after a daemon
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

  load(key: string): PersistedSend | undefined {
    const row = this.get.get(KV_PREFIX + key);
    if (!row || this.now() - row.updated_at > this.ttlMs) return undefined;
    try {
      return JSON.parse(row.value) as PersistedSend;
    } catch {
      return undefined;
    }
  }

  save(key: string, entry: PersistedSend): void {
    this.put.run(KV_PREFIX + key, JSON.stringify(entry), this.now());
    if (++this.writes % 200 === 0)
      this.prune.run(KV_PREFIX, KV_PREFIX.slice(0, -1) + ";", this.now() - this.ttlMs);
  }
}
