/**
 * Sessions and messages in SQLite (core tables). Invariants:
 * - a session key resolves to exactly one live session through `session_heads`;
 * - messages are appended in order and never rewritten, except that a message's status may change;
 * - reset and compaction create new sessions; old ones stay readable;
 * - every append writes the session's `tail_kind` (what the new newest row is) in the same
 *   transaction, so a rollback takes both back; other writers leave it NULL (unknown).
 *
 * Reading a session's messages is on every turn's path, and a long session has thousands of them, so
 * `messages()` keeps the rows of recently read sessions in memory (shared by every SessionStore of one
 * db, bounded in message-cache.ts) and reads only the rows appended since. The
 * cache is checked against the store on every read: its newest row must still be there (one rowid
 * lookup). Rows only ever go away from the end (a rolled-back transaction) or with their whole
 * session (a deleted session or agent), and either takes the newest row with it, so the session
 * reloads. Message ids only grow (AUTOINCREMENT). Until issue 26 the check counted the rows up to the
 * newest cached one: the same verdict for those two cases, but O(rows), 0.1 ms at 4,000 messages.
 *
 * Over 300 lines on purpose: every query of the session tables, so the SQL lives in one file (the one
 * exception, storing conversations brought from another program, is session-import.ts).
 */
import { randomUUID } from "node:crypto";
import type { Db } from "../store/db.js";
import {
  cacheOf,
  charsOf,
  compact,
  MAX_CACHED_BYTES,
  MAX_CACHED_SESSIONS,
  type CachedMessages,
} from "./message-cache.js";

export type * from "./session-types.js";
import type {
  MessageStatus,
  NewestMessage,
  NewMessage,
  SessionCreateOptions,
  SessionRow,
  StoredMessage,
  TailKind,
} from "./session-types.js";

/** Prepared-statement access to sessions and messages. One instance per db. */
export class SessionStore {
  private s;
  private cache: Map<string, CachedMessages<StoredMessage>>;
  private appendTx: (sessionId: string, m: NewMessage) => number;
  constructor(
    readonly db: Db,
    private now: () => number = Date.now,
  ) {
    this.cache = cacheOf(db);
    this.appendTx = db.transaction((sessionId: string, m: NewMessage) => this.appendRows(sessionId, m));
    this.s = {
      // A subquery, not a join: the same two index lookups, but SQLite runs the join form ~6x slower
      // here (25 vs 4 µs), and this runs on every turn.
      head: db.prepare<[string], SessionRow>(
        "SELECT * FROM sessions WHERE id = (SELECT session_id FROM session_heads WHERE key = ?)",
      ),
      byId: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
      insertSession: db.prepare(
        `INSERT INTO sessions (id, key, agent_id, created_at, updated_at, parent_id, reset_reason, model_override,
           compact_strategy, compact_keep_last_n, compact_observation_mask, compact_summary_model, origin, meta)
         VALUES (@id, @key, @agent_id, @now, @now, @parent_id, @reset_reason, @model_override, @compact_strategy,
           @compact_keep_last_n, @compact_observation_mask, @compact_summary_model, @origin, @meta)`,
      ),
      setHead: db.prepare(
        "INSERT INTO session_heads (key, session_id) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET session_id = excluded.session_id",
      ),
      insertMessage: db.prepare(
        `INSERT INTO messages (session_id, role, content, parts, tool_calls, tool_call_id, tool_name, model, finish_reason,
           status, usage, request_id, created_at)
         VALUES (@session_id, @role, @content, @parts, @tool_calls, @tool_call_id, @tool_name, @model, @finish_reason,
           @status, @usage, @request_id, @created_at)`,
      ),
      touch: db.prepare("UPDATE sessions SET updated_at = ?, tail_kind = ? WHERE id = ?"),
      setStatus: db.prepare("UPDATE messages SET status = ? WHERE id = ?"),
      messages: db.prepare<[string], StoredMessage>(
        "SELECT * FROM messages WHERE session_id = ? ORDER BY id",
      ),
      messagesPage: db.prepare<[string, number, number], StoredMessage>(
        "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
      ),
      messagesAfter: db.prepare<[string, number], StoredMessage>(
        "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
      ),
      // The newest row's kind alone, from the (session_id, id) index: no content is read.
      newest: db.prepare<[string], NewestMessage>(
        "SELECT role, (tool_calls IS NOT NULL AND tool_calls <> '') AS has_calls, status FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 1",
      ),
      // A rowid lookup: the check that cached rows are still there costs the same at 10 or 10,000 rows.
      hasRow: db.prepare<[number, string], { id: number }>(
        "SELECT id FROM messages WHERE id = ? AND session_id = ?",
      ),
      count: db.prepare<[string], { n: number; chars: number }>(
        "SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(content) + COALESCE(LENGTH(tool_calls), 0)), 0) AS chars FROM messages WHERE session_id = ?",
      ),
      setModel: db.prepare("UPDATE sessions SET model_override = ?, updated_at = ? WHERE id = ?"),
      setMeta: db.prepare("UPDATE sessions SET meta = ? WHERE id = ?"),
      setCompaction: db.prepare(
        `UPDATE sessions SET compact_strategy = @compact_strategy, compact_keep_last_n = @compact_keep_last_n,
           compact_observation_mask = @compact_observation_mask, compact_summary_model = @compact_summary_model
         WHERE id = @id`,
      ),
      listByKeyPrefix: db.prepare<[string, number], SessionRow & { message_count: number }>(
        `SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count
         FROM session_heads h JOIN sessions s ON s.id = h.session_id WHERE h.key LIKE ? ESCAPE '\\'
         ORDER BY s.updated_at DESC LIMIT ?`,
      ),
      listByAgent: db.prepare<[string, number], SessionRow & { message_count: number }>(
        `SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count
         FROM sessions s WHERE s.agent_id = ? ORDER BY s.updated_at DESC LIMIT ?`,
      ),
      deleteSession: db.prepare("DELETE FROM sessions WHERE id = ?"),
      deleteHeadsFor: db.prepare("DELETE FROM session_heads WHERE session_id = ?"),
    };
  }

  /** The kind of a session's newest message, from one indexed row (undefined when it has none). */
  newest(sessionId: string): NewestMessage | undefined {
    return this.s.newest.get(sessionId);
  }

  /** The live session of a key, if any. */
  head(key: string): SessionRow | undefined {
    return this.s.head.get(key);
  }

  get(id: string): SessionRow | undefined {
    return this.s.byId.get(id);
  }

  /** The live session of `key`, creating it for `agentId` when absent. */
  ensure(key: string, agentId: string, opts: SessionCreateOptions = {}): SessionRow {
    const existing = this.s.head.get(key);
    if (existing) return existing;
    return this.create(key, agentId, opts);
  }

  /** Creates a new session and makes it the head of its key. */
  create(
    key: string,
    agentId: string,
    opts: SessionCreateOptions & { parentId?: string; resetReason?: string; modelOverride?: string } = {},
  ): SessionRow {
    const id = randomUUID();
    const run = this.db.transaction(() => {
      this.s.insertSession.run({
        id,
        key,
        agent_id: agentId,
        now: this.now(),
        parent_id: opts.parentId ?? null,
        reset_reason: opts.resetReason ?? null,
        model_override: opts.modelOverride ?? null,
        compact_strategy: opts.compactStrategy ?? null,
        compact_keep_last_n: opts.compactKeepLastN ?? null,
        compact_observation_mask:
          opts.compactObservationMask === undefined ? null : opts.compactObservationMask ? 1 : 0,
        compact_summary_model: opts.compactSummaryModel ?? null,
        origin: opts.origin ?? null,
        meta: opts.meta ? JSON.stringify(opts.meta) : null,
      });
      this.s.setHead.run(key, id);
    });
    run();
    const row = this.s.byId.get(id);
    if (!row) throw new Error(`session ${id} vanished after insert`);
    return row;
  }

  /** `/new`: a fresh session under the same key. The previous one stays readable. */
  reset(key: string, agentId: string, reason = "reset"): SessionRow {
    return this.create(key, agentId, { resetReason: reason });
  }

  /** Appends a message; returns its id. Durable when this returns (WAL commit). */
  append(sessionId: string, m: NewMessage): number {
    // The message and the session's updated_at in one commit (inside a caller's transaction, a savepoint).
    return this.appendTx(sessionId, m);
  }

  private appendRows(sessionId: string, m: NewMessage): number {
    const now = this.now();
    const info = this.s.insertMessage.run({
      session_id: sessionId,
      role: m.role,
      content: m.content,
      parts: m.parts === undefined ? null : JSON.stringify(m.parts),
      tool_calls: m.toolCalls && m.toolCalls.length > 0 ? JSON.stringify(m.toolCalls) : null,
      tool_call_id: m.toolCallId ?? null,
      tool_name: m.toolName ?? null,
      model: m.model ?? null,
      finish_reason: m.finishReason ?? null,
      status: m.status ?? "ok",
      usage: m.usage ? JSON.stringify(m.usage) : null,
      request_id: m.requestId ?? null,
      created_at: now,
    });
    const kind: TailKind =
      m.role === "tool" ? "tool" : m.toolCalls && m.toolCalls.length > 0 ? "calls" : "plain";
    this.s.touch.run(now, kind, sessionId);
    return Number(info.lastInsertRowid);
  }

  setStatus(messageId: number, status: MessageStatus): void {
    this.s.setStatus.run(status, messageId);
    for (const [id, c] of this.cache) {
      const row = findById(c.rows, messageId);
      if (row) {
        row.status = status;
        // The next read gets a new array: what callers derived from the old one (history-cache.ts)
        // is keyed by it, and a changed row would otherwise go unnoticed.
        this.cache.delete(id);
        break;
      }
    }
  }

  /**
   * All messages of a session, oldest first. The rows may be shared with the cache: callers must not
   * modify them (the array itself is the caller's).
   */
  messages(sessionId: string): StoredMessage[] {
    return this.messagesView(sessionId).slice();
  }

  /**
   * The same messages as {@link messages} without the copy: the cache's own array, which later reads
   * extend in place by appended rows and which is replaced by a new array whenever rows change
   * otherwise (reload, eviction, a status change). Read-only for the caller; a cache derived from it
   * may be keyed by the array's identity.
   */
  messagesView(sessionId: string): readonly StoredMessage[] {
    const hit = this.cache.get(sessionId);
    if (hit) {
      this.cache.delete(sessionId); // re-inserted below: most recently read last
      if (hit.rows.length === 0 || this.s.hasRow.get(hit.lastId, sessionId) !== undefined) {
        const fresh = compact(this.s.messagesAfter.all(sessionId, hit.lastId), sessionId);
        if (fresh.length > 0) {
          for (const r of fresh) hit.rows.push(r);
          hit.lastId = fresh[fresh.length - 1]!.id;
          hit.chars += charsOf(fresh);
        }
        this.remember(sessionId, hit);
        return hit.rows;
      }
    }
    const rows = compact(this.s.messages.all(sessionId), sessionId);
    this.remember(sessionId, {
      rows,
      lastId: rows.length > 0 ? rows[rows.length - 1]!.id : 0,
      chars: charsOf(rows),
    });
    return rows;
  }

  private remember(sessionId: string, entry: CachedMessages<StoredMessage>): void {
    this.cache.set(sessionId, entry);
    let total = 0;
    for (const c of this.cache.values()) total += c.chars;
    // Oldest first; the entry just read is last, so it goes only when it alone is over the limit.
    for (const [id, c] of this.cache) {
      if (this.cache.size <= MAX_CACHED_SESSIONS && total <= MAX_CACHED_BYTES) break;
      this.cache.delete(id);
      total -= c.chars;
    }
  }

  /** A page of messages after `afterId`, oldest first. */
  page(sessionId: string, afterId: number, limit: number): StoredMessage[] {
    return this.s.messagesPage.all(sessionId, afterId, limit);
  }

  stats(sessionId: string): { messages: number; chars: number } {
    const r = this.s.count.get(sessionId);
    return { messages: r?.n ?? 0, chars: r?.chars ?? 0 };
  }

  setModelOverride(sessionId: string, model: string | null): void {
    this.s.setModel.run(model, this.now(), sessionId);
  }

  /** Replaces a session's free-form metadata (e.g. its API title); not activity, so no `updated_at`. */
  setMeta(sessionId: string, meta: Record<string, unknown> | null): void {
    this.s.setMeta.run(meta && Object.keys(meta).length > 0 ? JSON.stringify(meta) : null, sessionId);
  }

  /**
   * Replaces a session's own compaction settings; a field left undefined falls back to the agent's
   * and the defaults again (the same meaning as at create).
   */
  setCompaction(
    sessionId: string,
    c: Pick<
      SessionCreateOptions,
      "compactStrategy" | "compactKeepLastN" | "compactObservationMask" | "compactSummaryModel"
    >,
  ): void {
    this.s.setCompaction.run({
      id: sessionId,
      compact_strategy: c.compactStrategy ?? null,
      compact_keep_last_n: c.compactKeepLastN ?? null,
      compact_observation_mask:
        c.compactObservationMask === undefined ? null : c.compactObservationMask ? 1 : 0,
      compact_summary_model: c.compactSummaryModel ?? null,
    });
  }

  /** Live sessions whose key starts with `prefix` (all when empty), most recent first. */
  list(prefix = "", limit = 100): (SessionRow & { message_count: number })[] {
    const like = prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
    return this.s.listByKeyPrefix.all(like, limit);
  }

  /** All sessions (live and archived) of an agent, most recent first. */
  listByAgent(agentId: string, limit = 100): (SessionRow & { message_count: number })[] {
    return this.s.listByAgent.all(agentId, limit);
  }

  /** Deletes a session and its messages (cascade). Its key then has no head unless another session exists. */
  delete(sessionId: string): boolean {
    this.cache.delete(sessionId);
    const run = this.db.transaction(() => {
      this.s.deleteHeadsFor.run(sessionId);
      return this.s.deleteSession.run(sessionId).changes > 0;
    });
    return run();
  }
}

/** Binary search of rows sorted by id. */
function findById(rows: StoredMessage[], id: number): StoredMessage | undefined {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = rows[mid]!;
    if (r.id === id) return r;
    if (r.id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}
