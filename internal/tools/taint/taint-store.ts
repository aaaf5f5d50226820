/**
 * Where each session's taint is kept: SQLite rows keyed by the session's lineage (the first session
 * of a chain of compactions), so the taint survives a restart and a compaction (a summary of tainted
 * text is tainted), and only a new session (`/new`, which starts a new lineage) is clean.
 *
 * Invariants:
 * - a source is recorded once per lineage (kind + detail), keeping when it first entered;
 * - reads are served from memory after the first (this process is the only writer: the CLI only
 *   reads), so the per-turn check costs a map lookup;
 * - nothing ever deletes a source: there is no way to "untaint" a session but a new one.
 */
import type { Db } from "../../store/db.js";
import { TAINT_KINDS, type TaintInput, type TaintKind, type TaintSource } from "../../core/taint.js";

interface SessionLink {
  parent_id: string | null;
  reset_reason: string | null;
}

/** A tainted session as listed for the owner. */
export interface TaintedSession {
  lineageId: string;
  sources: TaintSource[];
}

const KINDS = new Set<string>(TAINT_KINDS);
/** Details are shown to the owner: long ones (a URL with a payload) are cut. */
const MAX_DETAIL = 300;

export class TaintStore {
  private lineage = new Map<string, string>();
  private cache = new Map<string, TaintSource[]>();
  private s;

  constructor(
    private db: Db,
    private now: () => number,
  ) {
    this.s = {
      link: db.prepare<[string], SessionLink>("SELECT parent_id, reset_reason FROM sessions WHERE id = ?"),
      insert: db.prepare(
        `INSERT OR IGNORE INTO session_taint (lineage_id, session_id, kind, detail, request_id, at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      sources: db.prepare<[string], { kind: string; detail: string; at: number }>(
        "SELECT kind, detail, at FROM session_taint WHERE lineage_id = ? ORDER BY id",
      ),
      head: db.prepare<[string], { session_id: string }>(
        "SELECT session_id FROM session_heads WHERE key = ?",
      ),
      userTurnsSince: db.prepare<[string, number], { n: number }>(
        "SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND role = 'user' AND created_at > ?",
      ),
    };
  }

  /** The first session of `sessionId`'s compaction chain (itself when it was not compacted from one). */
  lineageOf(sessionId: string): string {
    const hit = this.lineage.get(sessionId);
    if (hit !== undefined) return hit;
    let id = sessionId;
    // A chain is short (one link per compaction); the bound only guards against a corrupt loop.
    for (let i = 0; i < 10_000; i++) {
      const row = this.s.link.get(id);
      if (!row || row.reset_reason !== "compacted" || !row.parent_id) break;
      id = row.parent_id;
    }
    // Only a stored session's lineage is final; an id not (yet) stored is asked again next time.
    if (this.s.link.get(sessionId)) this.lineage.set(sessionId, id);
    return id;
  }

  /** The live session of a session key, if any. */
  headOf(key: string): string | undefined {
    return this.s.head.get(key)?.session_id;
  }

  /** Every source of the session's lineage, oldest first; empty when clean. */
  sources(sessionId: string): readonly TaintSource[] {
    if (!sessionId) return [];
    const lineage = this.lineageOf(sessionId);
    let list = this.cache.get(lineage);
    if (!list) {
      list = this.s.sources
        .all(lineage)
        .filter((r) => KINDS.has(r.kind))
        .map((r) => ({ kind: r.kind as TaintKind, detail: r.detail, at: r.at }));
      this.cache.set(lineage, list);
    }
    return list;
  }

  /** Records sources (inside the caller's transaction when there is one); returns the new ones. */
  add(sessionId: string, inputs: readonly TaintInput[], requestId?: string): TaintSource[] {
    if (!sessionId || inputs.length === 0) return [];
    const lineage = this.lineageOf(sessionId);
    const known = this.sources(sessionId);
    const added: TaintSource[] = [];
    const at = this.now();
    for (const input of inputs) {
      const detail =
        input.detail.length > MAX_DETAIL ? `${input.detail.slice(0, MAX_DETAIL)}…` : input.detail;
      if (known.some((k) => k.kind === input.kind && k.detail === detail)) continue;
      if (added.some((k) => k.kind === input.kind && k.detail === detail)) continue;
      this.s.insert.run(lineage, sessionId, input.kind, detail, requestId ?? null, at);
      added.push({ kind: input.kind, detail, at });
    }
    if (added.length) this.cache.set(lineage, [...known, ...added]);
    return added;
  }

  /** User messages stored in `sessionId` after `at`: how many turns ago a source entered. */
  turnsSince(sessionId: string, at: number): number {
    if (!sessionId) return 0;
    return this.s.userTurnsSince.get(sessionId, at)?.n ?? 0;
  }

  /** Drops the memory cache (another connection wrote; tests). */
  forget(): void {
    this.cache.clear();
  }
}

/** Reads the taint of sessions without a TaintStore (the CLI and console: read-only). */
export function taintOfSessions(db: Db, sessionIds: readonly string[]): Map<string, TaintSource[]> {
  let store: TaintStore;
  try {
    store = new TaintStore(db, () => 0);
  } catch {
    // A database the daemon has not migrated yet has no taint tables: nothing is tainted.
    return new Map();
  }
  const out = new Map<string, TaintSource[]>();
  for (const id of sessionIds) {
    const s = store.sources(id);
    if (s.length) out.set(id, [...s]);
  }
  return out;
}
