/**
 * The owner's standing answers to containment questions: "yes for this host for an hour" and "yes
 * for this session". Stored in SQLite (they survive a restart), scoped to one session lineage, one
 * kind of sink and one target, listed and revocable (`familiar approvals grants|revoke`, the console).
 *
 * Invariants:
 * - a grant never outlives its lineage: a new session (`/new`) matches no earlier grant;
 * - a host grant expires (`containment.host_grant_minutes`); a revoked or expired grant matches nothing;
 * - "yes once" is never stored: it covers only the call it answered.
 */
import { randomBytes } from "node:crypto";
import type { Db } from "../../store/db.js";

/** The kinds of sink a grant covers. */
export type SinkKind = "send" | "egress" | "exec" | "schedule" | "config" | "delegate" | "mcp";

/** `target`: one host or chat target; `session`: every target of this sink kind in the session. */
export type GrantScope = "target" | "session";

export interface Grant {
  id: string;
  lineageId: string;
  sessionKey: string;
  sink: SinkKind;
  /** Host, chat target, or `*` for a session grant. */
  target: string;
  scope: GrantScope;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
}

interface GrantRow {
  id: string;
  lineage_id: string;
  session_key: string;
  sink: string;
  target: string;
  scope: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

function toGrant(r: GrantRow): Grant {
  return {
    id: r.id,
    lineageId: r.lineage_id,
    sessionKey: r.session_key,
    sink: r.sink as SinkKind,
    target: r.target,
    scope: r.scope === "session" ? "session" : "target",
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
  };
}

export class GrantStore {
  private s;
  constructor(
    private db: Db,
    private now: () => number,
  ) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO approval_grants (id, lineage_id, session_key, sink, target, scope, created_at, expires_at)
         VALUES (@id, @lineage_id, @session_key, @sink, @target, @scope, @created_at, @expires_at)`,
      ),
      ofLineage: db.prepare<[string], GrantRow>(
        "SELECT * FROM approval_grants WHERE lineage_id = ? AND revoked_at IS NULL ORDER BY created_at",
      ),
      all: db.prepare<[number], GrantRow>(
        `SELECT * FROM approval_grants WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
         ORDER BY created_at DESC`,
      ),
      revoke: db.prepare("UPDATE approval_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
      byId: db.prepare<[string], GrantRow>("SELECT * FROM approval_grants WHERE id = ?"),
    };
  }

  /** Records a grant and returns it. */
  add(g: Omit<Grant, "id" | "createdAt" | "revokedAt">): Grant {
    const grant: Grant = {
      ...g,
      id: `g${randomBytes(5).toString("hex")}`,
      createdAt: this.now(),
      revokedAt: null,
    };
    this.s.insert.run({
      id: grant.id,
      lineage_id: grant.lineageId,
      session_key: grant.sessionKey,
      sink: grant.sink,
      target: grant.target,
      scope: grant.scope,
      created_at: grant.createdAt,
      expires_at: grant.expiresAt,
    });
    return grant;
  }

  /**
   * The live grant covering (lineage, sink, target), if any. Read from the store every time (only
   * sinks of tainted sessions ask), so a revocation by another process (the CLI) applies at once.
   */
  match(lineageId: string, sink: SinkKind, target: string): Grant | undefined {
    const list = this.s.ofLineage.all(lineageId).map(toGrant);
    const now = this.now();
    return list.find(
      (g) =>
        g.sink === sink &&
        (g.expiresAt === null || g.expiresAt > now) &&
        (g.scope === "session" || g.target === target),
    );
  }

  /** Live grants, newest first. */
  list(): Grant[] {
    return this.s.all.all(this.now()).map(toGrant);
  }

  get(id: string): Grant | undefined {
    const r = this.s.byId.get(id);
    return r ? toGrant(r) : undefined;
  }

  /** Revokes a grant; false when unknown or already revoked. */
  revoke(id: string): boolean {
    const g = this.s.byId.get(id.trim());
    if (!g) return false;
    return this.s.revoke.run(this.now(), g.id).changes > 0;
  }
}
