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
  kind: "turn" | "model" | "tool" | "subagent";
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

export class TraceRecorder {
  private ins;
  private upd;
  private updReq;
  private byRoot;
  private rootOf;
  constructor(
    db: Db,
    private now: () => number,
  ) {
    this.ins = db.prepare(
      `INSERT INTO traces (request_id, parent_request_id, root_request_id, depth, kind, name, session_id, agent_id, status, started_at, ended_at, meta)
       VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
    );
    this.upd = db.prepare("UPDATE traces SET status = ?, ended_at = ? WHERE id = ?");
    this.updReq = db.prepare(
      "UPDATE traces SET status = ?, ended_at = ? WHERE request_id = ? AND kind = 'turn'",
    );
    this.byRoot = db.prepare<[string], TraceRow>(
      "SELECT * FROM traces WHERE root_request_id = ? ORDER BY id",
    );
    this.rootOf = db.prepare<[string], { root_request_id: string }>(
      "SELECT root_request_id FROM traces WHERE request_id = ? LIMIT 1",
    );
  }

  /** Opens a record; returns its id for `end`. */
  start(t: TraceStart): number {
    const info = this.ins.run(
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
    );
    return Number(info.lastInsertRowid);
  }

  /** A completed instant record (a model call, with its usage as meta). */
  point(t: {
    requestId: string;
    rootRequestId: string;
    depth: number;
    kind: TraceStart["kind"];
    name: string;
    meta?: unknown;
  }): void {
    const now = this.now();
    this.ins.run(
      t.requestId,
      null,
      t.rootRequestId,
      t.depth,
      t.kind,
      t.name,
      null,
      null,
      "ok",
      now,
      now,
      t.meta ? JSON.stringify(t.meta) : null,
    );
  }

  end(id: number, status: string): void {
    this.upd.run(status, this.now(), id);
  }

  endRequest(requestId: string, status: string): void {
    this.updReq.run(status, this.now(), requestId);
  }

  /** Every record of the tree that `requestId` belongs to, oldest first. */
  tree(requestId: string): TraceRow[] {
    const root = this.rootOf.get(requestId)?.root_request_id ?? requestId;
    return this.byRoot.all(root);
  }
}
