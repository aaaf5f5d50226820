/**
 * Where a runtime job was asked (`cron_origins`, keyed by job) and which jobs hold a reply nobody
 * received (`cron_undelivered`). Shared by the service and the CLI, like cron-store.ts.
 *
 * Invariants:
 * - an origin is written only by the daemon's own code from the calling turn's context (the cron
 *   tool) or by `familiar cron add` on the owner's machine; no request parameter sets it;
 * - a job id reused after a removal never inherits the old job's origin: every put replaces the row
 *   or deletes it.
 */
import type { Db } from "../store/db.js";

/** Where a job was asked: a chat session (with its channel target, if the chat has one), or the CLI. */
export type CronOrigin = { kind: "chat"; sessionKey: string; replyTarget?: string } | { kind: "cli" };

interface OriginRow {
  kind: string;
  session_key: string | null;
  reply_target: string | null;
}

/** A job whose last reply could be delivered nowhere. */
export interface UndeliveredReply {
  jobId: string;
  runId: number;
  since: number;
}

export class CronOrigins {
  private q;
  constructor(db: Db) {
    this.q = {
      get: db.prepare<[string], OriginRow>(
        "SELECT kind, session_key, reply_target FROM cron_origins WHERE job_id = ?",
      ),
      put: db.prepare(
        `INSERT INTO cron_origins (job_id, kind, session_key, reply_target, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(job_id) DO UPDATE SET kind = excluded.kind, session_key = excluded.session_key,
           reply_target = excluded.reply_target, created_at = excluded.created_at`,
      ),
      del: db.prepare<[string]>("DELETE FROM cron_origins WHERE job_id = ?"),
      undelivered: db.prepare<[], { job_id: string; run_id: number; since: number }>(
        "SELECT job_id, run_id, since FROM cron_undelivered ORDER BY since, job_id",
      ),
      markUndelivered: db.prepare<[string, number, number]>(
        `INSERT INTO cron_undelivered (job_id, run_id, since) VALUES (?, ?, ?)
         ON CONFLICT(job_id) DO UPDATE SET run_id = excluded.run_id`,
      ),
      clearUndelivered: db.prepare<[string]>("DELETE FROM cron_undelivered WHERE job_id = ?"),
    };
  }

  /** The job's origin; undefined for config jobs, jobs added by the gateway and jobs from before origins. */
  get(jobId: string): CronOrigin | undefined {
    const r = this.q.get.get(jobId);
    if (!r) return undefined;
    if (r.kind === "cli") return { kind: "cli" };
    if (r.kind === "chat" && r.session_key)
      return {
        kind: "chat",
        sessionKey: r.session_key,
        ...(r.reply_target ? { replyTarget: r.reply_target } : {}),
      };
    return undefined;
  }

  /** Records (or, with undefined, forgets) where a job was asked. */
  put(jobId: string, origin: CronOrigin | undefined, now: number): void {
    if (!origin) {
      this.q.del.run(jobId);
      return;
    }
    if (origin.kind === "cli") this.q.put.run(jobId, "cli", null, null, now);
    else this.q.put.run(jobId, "chat", origin.sessionKey, origin.replyTarget ?? null, now);
  }

  delete(jobId: string): void {
    this.q.del.run(jobId);
  }

  /**
   * Records that the job's run `runId` reached nobody. Returns true when this starts a streak (the
   * owner has not been warned about this job yet), false when it continues one.
   */
  markUndelivered(jobId: string, runId: number, now: number): boolean {
    const before = this.q.undelivered.all().some((r) => r.job_id === jobId);
    this.q.markUndelivered.run(jobId, runId, now);
    return !before;
  }

  /** A delivered run ends the job's streak. */
  clearUndelivered(jobId: string): void {
    this.q.clearUndelivered.run(jobId);
  }

  /** Jobs whose last reply reached nobody, oldest first. */
  undelivered(): UndeliveredReply[] {
    return this.q.undelivered.all().map((r) => ({ jobId: r.job_id, runId: r.run_id, since: r.since }));
  }
}
