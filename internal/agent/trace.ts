/**
 * Call-tree records: every turn, model call, tool call and subagent call of one user message, linked
 * by request id, parent request id and depth, so the whole tree can be listed (`familiar trace`).
 */
import type { Db } from "../store/db.js";

export interface TraceStart {
  requestId: string;
  parentRequestId: string | null;
  rootRequestId: string;
  depth: number;
  /**
   * `taint`: the session's taint (prompt-injection containment). `approval`: a wait for the owner's
   * answer (an exec or write that asks, or a containment sink), from the question to the decision.
   * `retry`: a failed model attempt that was retried or fell back. `compaction`: the history was
   * compacted before a model call (or after a context overflow).
   */
  kind: "turn" | "model" | "tool" | "subagent" | "taint" | "approval" | "retry" | "compaction";
  name: string;
  sessionId: string | null;
  agentId: string | null;
}

export interface TraceRow {
  id: number;
  request_id: string;
  parent_request_id: string | null;
  root_request_id: string;
  depth: number;
  kind: string;
  name: string;
  session_id: string | null;
  agent_id: string | null;
  status: string;
  started_at: number;
  ended_at: number | null;
  meta: string | null;
}

/** A write waiting for the next flush. */
type TraceOp =
  | { k: "ins"; id: number; row: unknown[] }
  | { k: "end"; id: number; status: string; at: number; meta: string | null }
  | { k: "endReq"; requestId: string; status: string; at: number };

/**
 * Trace writes of one database, shared by every recorder on it: rows are written behind, in batches,
 * so a turn does not pay a commit for each trace row (they were 2 of a turn's 5 commits).
 * Invariants: a write is flushed within {@link TRACE_FLUSH_MS}, inside the next transaction that
 * flushes it explicitly (the model-call commit), before any read through a recorder, and on `flush()`
 * (daemon stop); ids are allocated here, so `end(id)` works before the row is written. A kill -9 may
 * lose the last {@link TRACE_FLUSH_MS} of trace rows: they are diagnostics, never acknowledged data.
 */
class TraceQueue {
  pending: TraceOp[] = [];
  private nextId: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private ins;
  private upd;
  private updReq;
  private tx;
  onError: ((err: Error) => void) | undefined;

  constructor(private db: Db) {
    this.ins = db.prepare(
      `INSERT INTO traces (id, request_id, parent_request_id, root_request_id, depth, kind, name, session_id, agent_id, status, started_at, ended_at, meta)
       VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
    );
    this.upd = db.prepare(
      "UPDATE traces SET status = ?, ended_at = ?, meta = COALESCE(?, meta) WHERE id = ?",
    );
    this.updReq = db.prepare(
      "UPDATE traces SET status = ?, ended_at = ? WHERE request_id = ? AND kind = 'turn'",
    );
    this.tx = db.transaction(() => this.apply());
  }

  allocateId(): number {
    if (this.nextId === undefined) {
      // AUTOINCREMENT never reuses an id: start past both the largest row and the sequence.
      const row = this.db
        .prepare<[], { m: number | null; seq: number | null }>(
          "SELECT (SELECT MAX(id) FROM traces) AS m, (SELECT seq FROM sqlite_sequence WHERE name = 'traces') AS seq",
        )
        .get();
      this.nextId = Math.max(row?.m ?? 0, row?.seq ?? 0) + 1;
    }
    return this.nextId++;
  }

  push(op: TraceOp): void {
    this.pending.push(op);
    if (this.pending.length >= MAX_PENDING) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), TRACE_FLUSH_MS).unref();
  }

  /** Writes what is pending in its own transaction. Never throws: a failure is reported and dropped. */
  flush(): void {
    if (this.pending.length === 0) return this.clearTimer();
    try {
      if (this.db.inTransaction) this.apply();
      else this.tx();
    } catch (err) {
      this.pending.length = 0;
      this.onError?.(err as Error);
    }
  }

  /** Writes what is pending inside the caller's transaction (which commits or rolls back with it). */
  apply(): void {
    this.clearTimer();
    const ops = this.pending;
    this.pending = [];
    for (const op of ops) {
      if (op.k === "ins") this.ins.run(op.id, ...op.row);
      else if (op.k === "end") this.upd.run(op.status, op.at, op.meta, op.id);
      else this.updReq.run(op.status, op.at, op.requestId);
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Longest a trace write waits before it is committed. */
export const TRACE_FLUSH_MS = 100;
/** Pending writes that force a flush (bounds memory under a burst). */
const MAX_PENDING = 512;

const queues = new WeakMap<Db, TraceQueue>();
function queueOf(db: Db): TraceQueue {
  let q = queues.get(db);
  if (!q) queues.set(db, (q = new TraceQueue(db)));
  return q;
}

/** Commits the trace rows pending on `db` (the daemon calls it last, before closing the store). */
export function flushTraces(db: Db): void {
  queues.get(db)?.flush();
}

export class TraceRecorder {
  private byRoot;
  private rootOf;
  private q: TraceQueue;
  constructor(
    db: Db,
    private now: () => number,
    onError?: (err: Error) => void,
  ) {
    this.q = queueOf(db);
    if (onError) this.q.onError = onError;
    this.byRoot = db.prepare<[string], TraceRow>(
      "SELECT * FROM traces WHERE root_request_id = ? ORDER BY id",
    );
    this.rootOf = db.prepare<[string], { root_request_id: string }>(
      "SELECT root_request_id FROM traces WHERE request_id = ? LIMIT 1",
    );
  }

  /** Opens a record; returns its id for `end`. Written behind (see TraceQueue). */
  start(t: TraceStart): number {
    const id = this.q.allocateId();
    this.q.push({
      k: "ins",
      id,
      row: [
        t.requestId,
        t.parentRequestId,
        t.rootRequestId,
        t.depth,
        t.kind,
        t.name,
        t.sessionId,
        t.agentId,
        "running",
        this.now(),
        null,
        null,
      ],
    });
    return id;
  }

  /** A completed instant record (a model call, with its usage as meta). */
  point(t: {
    requestId: string;
    rootRequestId: string;
    depth: number;
    kind: TraceStart["kind"];
    name: string;
    meta?: unknown;
    /** How long the call took: the row then starts that long before now (a bar on the timeline). */
    durationMs?: number;
  }): void {
    const now = this.now();
    const started = t.durationMs && t.durationMs > 0 ? now - Math.round(t.durationMs) : now;
    this.q.push({
      k: "ins",
      id: this.q.allocateId(),
      row: [
        t.requestId,
        null,
        t.rootRequestId,
        t.depth,
        t.kind,
        t.name,
        null,
        null,
        "ok",
        started,
        now,
        t.meta ? JSON.stringify(t.meta) : null,
      ],
    });
  }

  /** Closes a record opened by `start`; `meta` (what was decided, why) is stored with it. */
  end(id: number, status: string, meta?: unknown): void {
    this.q.push({
      k: "end",
      id,
      status,
      at: this.now(),
      meta: meta === undefined ? null : JSON.stringify(meta),
    });
  }

  endRequest(requestId: string, status: string): void {
    this.q.push({ k: "endReq", requestId, status, at: this.now() });
  }

  /** Commits pending writes now, in the caller's transaction when there is one. */
  flush(): void {
    this.q.flush();
  }

  /** Every record of the tree that `requestId` belongs to, oldest first. */
  tree(requestId: string): TraceRow[] {
    this.q.flush();
    const root = this.rootOf.get(requestId)?.root_request_id ?? requestId;
    return this.byRoot.all(root);
  }
}
