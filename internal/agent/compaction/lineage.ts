/**
 * Persistence of a compaction, and lineage queries (gateway-agents-api "Z-chained lineage").
 *
 * Invariants:
 * - nothing is deleted: the source session and all its messages stay readable;
 * - one compaction = one transaction: the source is archived (archived_at, successor_id), a
 *   `compaction_summaries` row is written, the successor is created under the same key with
 *   parent_id = source and the source's agent, settings and model override, its first message is the
 *   summary (role `system`, status `summary`, content starting with SUMMARY_MARKER), the kept
 *   messages follow as verbatim copies, and the key's head moves to the successor;
 * - lineage is walkable from any session id, backward through parent_id and forward through successor_id.
 */
import { randomUUID } from "node:crypto";
import type { Db } from "../../store/db.js";
import type { CompactionLevel } from "./compact.js";
import { summaryMessageContent } from "./prompts.js";

/** Typed compaction persistence errors. */
export class CompactionError extends Error {
  constructor(
    readonly code:
      | "SESSION_NOT_FOUND"
      | "SESSION_ARCHIVED"
      | "MESSAGE_NOT_IN_SESSION"
      | "COMPACTION_OFF"
      | "COMPACTION_BUSY"
      | "NOTHING_TO_COMPACT"
      | "COMPACT_BAD_OPTION",
    message: string,
    readonly info: { successorId?: string } = {},
  ) {
    super(message);
    this.name = "CompactionError";
  }
}

export interface ApplyCompactionInput {
  sourceSessionId: string;
  summary: string;
  level: Exclude<CompactionLevel, "noop">;
  /** Store ids of the source's messages to copy verbatim into the successor, in order. */
  keptMessageIds: readonly number[];
  /**
   * Kept messages copied with a different text (the protected tail cut to fit the window): source
   * message id -> the successor's content (and parts, JSON, for a message with images). The source
   * row keeps the full text.
   */
  replacedContent?: ReadonlyMap<number, { content: string; parts?: string }>;
  tokensBefore: number;
  tokensAfter: number;
  messagesSummarised: number;
  instructions?: string;
  now?: number;
}

export interface ApplyCompactionResult {
  successorId: string;
  summaryId: string;
  summaryMessageId: number;
}

interface SessionLite {
  id: string;
  key: string;
  agent_id: string;
  created_at: number;
  archived_at: number | null;
  parent_id: string | null;
  successor_id: string | null;
  reset_reason: string | null;
}

/** One session of a lineage chain. */
export interface LineageEntry {
  id: string;
  key: string;
  agentId: string;
  createdAt: number;
  archivedAt: number | null;
  parentId: string | null;
  successorId: string | null;
  messageCount: number;
}

/** A `compaction_summaries` row. */
export interface SummaryRecord {
  id: string;
  sourceSessionId: string | null;
  successorSessionId: string | null;
  summary: string;
  level: string;
  tokensBefore: number;
  tokensAfter: number;
  messagesSummarised: number;
  instructions: string | null;
  createdAt: number;
}

export interface Lineage {
  session: LineageEntry;
  /** Ancestors, nearest first. */
  backward: LineageEntry[];
  /** Successors, nearest first. */
  forward: LineageEntry[];
  /** Summaries along the whole chain, oldest first. */
  summaries: SummaryRecord[];
}

const statements = new WeakMap<Db, ReturnType<typeof prepare>>();

function prepare(db: Db) {
  return {
    session: db.prepare<[string], SessionLite>(
      "SELECT id, key, agent_id, created_at, archived_at, parent_id, successor_id, reset_reason FROM sessions WHERE id = ?",
    ),
    count: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?"),
    createSuccessor: db.prepare(
      `INSERT INTO sessions (id, key, agent_id, created_at, updated_at, parent_id, reset_reason, model_override,
         compact_strategy, compact_keep_last_n, compact_observation_mask, compact_summary_model, origin, meta)
       SELECT @id, key, agent_id, @now, @now, id, 'compacted', model_override, compact_strategy, compact_keep_last_n,
         compact_observation_mask, compact_summary_model, origin, meta
       FROM sessions WHERE id = @source`,
    ),
    archive: db.prepare("UPDATE sessions SET archived_at = ?, successor_id = ?, updated_at = ? WHERE id = ?"),
    insertSummary: db.prepare(
      `INSERT INTO compaction_summaries (id, source_session_id, successor_session_id, summary, level, tokens_before,
         tokens_after, messages_summarised, instructions, created_at)
       VALUES (@id, @source, @successor, @summary, @level, @tokensBefore, @tokensAfter, @messagesSummarised,
         @instructions, @now)`,
    ),
    insertSummaryMessage: db.prepare(
      "INSERT INTO messages (session_id, role, content, status, created_at) VALUES (?, 'system', ?, 'summary', ?)",
    ),
    messageSession: db.prepare<[number], { session_id: string }>(
      "SELECT session_id FROM messages WHERE id = ?",
    ),
    copyMessage: db.prepare(
      `INSERT INTO messages (session_id, role, content, parts, tool_calls, tool_call_id, tool_name, model, finish_reason,
         status, usage, request_id, created_at)
       SELECT ?, role, content, parts, tool_calls, tool_call_id, tool_name, model, finish_reason, status, usage,
         request_id, created_at FROM messages WHERE id = ?`,
    ),
    replaceContent: db.prepare("UPDATE messages SET content = ?, parts = ? WHERE id = ?"),
    head: db.prepare<[string], { session_id: string }>("SELECT session_id FROM session_heads WHERE key = ?"),
    setHead: db.prepare(
      "INSERT INTO session_heads (key, session_id) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET session_id = excluded.session_id",
    ),
    summariesOf: db.prepare<[string, string], Record<string, unknown>>(
      "SELECT * FROM compaction_summaries WHERE source_session_id = ? OR successor_session_id = ? ORDER BY created_at, rowid",
    ),
  };
}

function stmts(db: Db): ReturnType<typeof prepare> {
  let s = statements.get(db);
  if (!s) {
    s = prepare(db);
    statements.set(db, s);
  }
  return s;
}

/** Persists a compaction in one transaction (see the module invariants). */
export function applyCompaction(db: Db, input: ApplyCompactionInput): ApplyCompactionResult {
  const s = stmts(db);
  const now = input.now ?? Date.now();
  const run = db.transaction((): ApplyCompactionResult => {
    const source = s.session.get(input.sourceSessionId);
    if (!source) throw new CompactionError("SESSION_NOT_FOUND", `no session ${input.sourceSessionId}`);
    if (source.archived_at !== null)
      throw new CompactionError(
        "SESSION_ARCHIVED",
        `session ${source.id} is archived${source.successor_id ? `; its successor is ${source.successor_id}` : ""}`,
        source.successor_id ? { successorId: source.successor_id } : {},
      );
    for (const id of input.keptMessageIds)
      if (s.messageSession.get(id)?.session_id !== source.id)
        throw new CompactionError("MESSAGE_NOT_IN_SESSION", `message ${id} is not in session ${source.id}`);
    const successorId = randomUUID();
    const summaryId = randomUUID();
    s.createSuccessor.run({ id: successorId, now, source: source.id });
    s.archive.run(now, successorId, now, source.id);
    s.insertSummary.run({
      id: summaryId,
      source: source.id,
      successor: successorId,
      summary: input.summary,
      level: input.level,
      tokensBefore: input.tokensBefore,
      tokensAfter: input.tokensAfter,
      messagesSummarised: input.messagesSummarised,
      instructions: input.instructions ?? null,
      now,
    });
    const summaryMessageId = Number(
      s.insertSummaryMessage.run(successorId, summaryMessageContent(input.summary), now).lastInsertRowid,
    );
    for (const id of input.keptMessageIds) {
      const copy = Number(s.copyMessage.run(successorId, id).lastInsertRowid);
      const r = input.replacedContent?.get(id);
      if (r) s.replaceContent.run(r.content, r.parts ?? null, copy);
    }
    // Only a live head moves: compacting a session that was already replaced by /new must not
    // hijack its key.
    const head = s.head.get(source.key);
    if (!head || head.session_id === source.id) s.setHead.run(source.key, successorId);
    return { successorId, summaryId, summaryMessageId };
  });
  return run.immediate();
}

function entry(db: Db, row: SessionLite): LineageEntry {
  return {
    id: row.id,
    key: row.key,
    agentId: row.agent_id,
    createdAt: row.created_at,
    archivedAt: row.archived_at,
    parentId: row.parent_id,
    successorId: row.successor_id,
    messageCount: stmts(db).count.get(row.id)?.n ?? 0,
  };
}

function summaryRecord(r: Record<string, unknown>): SummaryRecord {
  return {
    id: String(r.id),
    sourceSessionId: (r.source_session_id as string | null) ?? null,
    successorSessionId: (r.successor_session_id as string | null) ?? null,
    summary: String(r.summary),
    level: String(r.level),
    tokensBefore: Number(r.tokens_before),
    tokensAfter: Number(r.tokens_after),
    messagesSummarised: Number(r.messages_summarised),
    instructions: (r.instructions as string | null) ?? null,
    createdAt: Number(r.created_at),
  };
}

/** The lineage of any session id, or undefined when it does not exist. */
export function lineage(db: Db, sessionId: string): Lineage | undefined {
  const s = stmts(db);
  const self = s.session.get(sessionId);
  if (!self) return undefined;
  const seen = new Set<string>([self.id]);
  const backward: LineageEntry[] = [];
  for (let p = self.parent_id; p && !seen.has(p);) {
    const row = s.session.get(p);
    if (!row) break;
    seen.add(row.id);
    backward.push(entry(db, row));
    p = row.parent_id;
  }
  const forward: LineageEntry[] = [];
  for (let n = self.successor_id; n && !seen.has(n);) {
    const row = s.session.get(n);
    if (!row) break;
    seen.add(row.id);
    forward.push(entry(db, row));
    n = row.successor_id;
  }
  const byId = new Map<string, SummaryRecord>();
  // Chain order (oldest session first) so equal timestamps still come out in lineage order.
  const chain = [...backward.map((e) => e.id).reverse(), self.id, ...forward.map((e) => e.id)];
  for (const id of chain) for (const r of s.summariesOf.all(id, id)) byId.set(String(r.id), summaryRecord(r));
  const summaries = [...byId.values()].sort((a, b) => a.createdAt - b.createdAt);
  return { session: entry(db, self), backward, forward, summaries };
}

/** Follows successor links to the live end of a chain (for a 308-style redirect from an archived id). */
export function latestSuccessor(db: Db, sessionId: string): string | undefined {
  const s = stmts(db);
  let row = s.session.get(sessionId);
  if (!row) return undefined;
  const seen = new Set<string>();
  while (row.successor_id && !seen.has(row.id)) {
    seen.add(row.id);
    const next = s.session.get(row.successor_id);
    if (!next) break;
    row = next;
  }
  return row.id;
}
