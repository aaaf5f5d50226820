/**
 * SQLite access for cron (tables in cron-migrations.ts). Shared by the service and the CLI, which may
 * work on the same file from another process: every statement is a single prepared statement, so a
 * CLI write is atomic and the daemon sees it on its next `PRAGMA data_version` check.
 */
import type { Db } from "../store/db.js";
import { cronJobSchema } from "../config/schema.js";
import type { CronJobDef, CronState } from "./job.js";

export type { CronState } from "./job.js";

/** One run (or skipped run) of a job. */
export interface CronRunRecord {
  id: number;
  jobId: string;
  trigger: "schedule" | "catch_up" | "manual" | "resume";
  dueAt: number | null;
  startedAt: number;
  endedAt: number | null;
  /** `interrupted`: a crash stopped it (a scheduled one is resumed once by a `resume` run). */
  status: "running" | "ok" | "error" | "skipped" | "interrupted";
  /** The one outcome of the run: on time, late, skipped (by policy or overlap), failed, interrupted. */
  outcome: "running" | "on_time" | "late" | "skipped" | "failed" | "interrupted";
  /** How late it started (ms after its instant), when late. */
  lateMs: number | null;
  /** How many scheduled instants this row accounts for (more than 1 after downtime or a clock jump). */
  covers: number;
  /** The interrupted run this one resumes. */
  resumeOf: number | null;
  error: string | null;
  tokens: number;
  outputPreview: string | null;
  delivered: boolean;
  sessionKey: string | null;
}

interface StateRow {
  job_id: string;
  schedule_key: string;
  anchor_at: number;
  last_due_at: number | null;
  last_run_at: number | null;
  last_end_at: number | null;
  last_status: string | null;
  last_error: string | null;
  failures: number;
  completed_at: number | null;
}

interface RunRow {
  id: number;
  job_id: string;
  trigger: string;
  due_at: number | null;
  started_at: number;
  ended_at: number | null;
  status: string;
  error: string | null;
  tokens: number;
  output_preview: string | null;
  delivered: number;
  session_key: string | null;
  late_ms: number | null;
  covers: number;
  resume_of: number | null;
}

/** Runs kept per job; older rows are pruned when a run ends. */
export const RUNS_KEPT_PER_JOB = 200;

export class CronStore {
  private q;
  constructor(private db: Db) {
    this.q = {
      jobs: db.prepare<[], { id: string; spec: string }>(
        "SELECT id, spec FROM cron_jobs ORDER BY created_at, id",
      ),
      job: db.prepare<[string], { id: string; spec: string }>("SELECT id, spec FROM cron_jobs WHERE id = ?"),
      putJob: db.prepare(
        `INSERT INTO cron_jobs (id, spec, created_at, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at`,
      ),
      delJob: db.prepare<[string]>("DELETE FROM cron_jobs WHERE id = ?"),
      state: db.prepare<[string], StateRow>("SELECT * FROM cron_state WHERE job_id = ?"),
      putState: db.prepare(
        `INSERT INTO cron_state (job_id, schedule_key, anchor_at, last_due_at, last_run_at, last_end_at,
           last_status, last_error, failures, completed_at)
         VALUES (@jobId, @scheduleKey, @anchorAt, @lastDueAt, @lastRunAt, @lastEndAt, @lastStatus, @lastError,
           @failures, @completedAt)
         ON CONFLICT(job_id) DO UPDATE SET schedule_key = excluded.schedule_key, anchor_at = excluded.anchor_at,
           last_due_at = excluded.last_due_at, last_run_at = excluded.last_run_at, last_end_at = excluded.last_end_at,
           last_status = excluded.last_status, last_error = excluded.last_error, failures = excluded.failures,
           completed_at = excluded.completed_at`,
      ),
      delState: db.prepare<[string]>("DELETE FROM cron_state WHERE job_id = ?"),
      insertRun: db.prepare(
        `INSERT INTO cron_runs (job_id, trigger, due_at, started_at, ended_at, status, error, session_key,
           late_ms, covers, resume_of)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      finishRun: db.prepare(
        `UPDATE cron_runs SET ended_at = ?, status = ?, error = ?, tokens = ?, output_preview = ?, delivered = ?
         WHERE id = ?`,
      ),
      runs: db.prepare<[string, number], RunRow>(
        "SELECT * FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT ?",
      ),
      run: db.prepare<[number], RunRow>("SELECT * FROM cron_runs WHERE id = ?"),
      prune: db.prepare(
        `DELETE FROM cron_runs WHERE job_id = ? AND id <= (
           SELECT id FROM cron_runs WHERE job_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
      ),
      running: db.prepare<[], RunRow>("SELECT * FROM cron_runs WHERE status = 'running' ORDER BY id"),
      interrupted: db.prepare<[string, number, number]>(
        "UPDATE cron_runs SET status = 'interrupted', error = ?, ended_at = ? WHERE id = ? AND status = 'running'",
      ),
      resumed: db.prepare<[number], { n: number }>("SELECT COUNT(*) AS n FROM cron_runs WHERE resume_of = ?"),
    };
  }

  /** Runtime jobs. Rows that no longer validate are returned in `invalid` (never silently dropped). */
  runtimeJobs(): { jobs: CronJobDef[]; invalid: { id: string; error: string }[] } {
    const jobs: CronJobDef[] = [];
    const invalid: { id: string; error: string }[] = [];
    for (const row of this.q.jobs.all()) {
      const r = parseSpec(row.spec);
      if (r.ok) jobs.push(r.job);
      else invalid.push({ id: row.id, error: r.error });
    }
    return { jobs, invalid };
  }

  runtimeJob(id: string): CronJobDef | undefined {
    const row = this.q.job.get(id);
    if (!row) return undefined;
    const r = parseSpec(row.spec);
    return r.ok ? r.job : undefined;
  }

  putRuntimeJob(job: CronJobDef, now: number): void {
    this.q.putJob.run(job.id, JSON.stringify(job), now, now);
  }

  /** Deletes a runtime job and its state (its run history stays readable). */
  deleteRuntimeJob(id: string): boolean {
    const n = this.q.delJob.run(id).changes;
    this.q.delState.run(id);
    return n > 0;
  }

  state(jobId: string): CronState | undefined {
    const r = this.q.state.get(jobId);
    if (!r) return undefined;
    return {
      jobId: r.job_id,
      scheduleKey: r.schedule_key,
      anchorAt: r.anchor_at,
      lastDueAt: r.last_due_at,
      lastRunAt: r.last_run_at,
      lastEndAt: r.last_end_at,
      lastStatus: r.last_status,
      lastError: r.last_error,
      failures: r.failures,
      completedAt: r.completed_at,
    };
  }

  putState(s: CronState): void {
    this.q.putState.run(s);
  }

  startRun(r: {
    jobId: string;
    trigger: CronRunRecord["trigger"];
    dueAt: number | null;
    startedAt: number;
    status: "running" | "skipped";
    error?: string;
    sessionKey: string | null;
    lateMs?: number | null;
    covers?: number;
    resumeOf?: number | null;
  }): number {
    const ended = r.status === "skipped" ? r.startedAt : null;
    return Number(
      this.q.insertRun.run(
        r.jobId,
        r.trigger,
        r.dueAt,
        r.startedAt,
        ended,
        r.status,
        r.error ?? null,
        r.sessionKey,
        r.lateMs ?? null,
        r.covers ?? 1,
        r.resumeOf ?? null,
      ).lastInsertRowid,
    );
  }

  finishRun(
    id: number,
    jobId: string,
    r: {
      endedAt: number;
      status: "ok" | "error";
      error: string | null;
      tokens: number;
      preview: string | null;
      delivered: boolean;
    },
  ): void {
    this.q.finishRun.run(r.endedAt, r.status, r.error, r.tokens, r.preview, r.delivered ? 1 : 0, id);
    this.q.prune.run(jobId, jobId, RUNS_KEPT_PER_JOB);
  }

  runs(jobId: string, limit = 20): CronRunRecord[] {
    return this.q.runs.all(jobId, limit).map(toRun);
  }

  run(id: number): CronRunRecord | undefined {
    const r = this.q.run.get(id);
    return r ? toRun(r) : undefined;
  }

  /**
   * Runs left `running` by a daemon that died are marked `interrupted` at start (in one transaction);
   * returns them so the service can resume each scheduled one once.
   */
  markInterrupted(now: number): CronRunRecord[] {
    return this.db.transaction(() => {
      const rows = this.q.running.all();
      for (const r of rows)
        this.q.interrupted.run("interrupted: the daemon stopped during the run", now, r.id);
      return rows.map((r) => toRun({ ...r, status: "interrupted", ended_at: now }));
    })();
  }

  /** Whether a run was already resumed (a resumed run is never resumed again). */
  wasResumed(runId: number): boolean {
    return (this.q.resumed.get(runId)?.n ?? 0) > 0;
  }

  /** Cheap change counter: moves when ANOTHER connection (the CLI) commits. */
  dataVersion(): number {
    return Number(this.db.pragma("data_version", { simple: true }));
  }
}

function outcomeOf(r: RunRow): CronRunRecord["outcome"] {
  switch (r.status) {
    case "ok":
      return r.late_ms != null ? "late" : "on_time";
    case "error":
      return "failed";
    case "skipped":
    case "interrupted":
    case "running":
      return r.status;
    default:
      return "failed";
  }
}

function toRun(r: RunRow): CronRunRecord {
  return {
    id: r.id,
    jobId: r.job_id,
    trigger: r.trigger as CronRunRecord["trigger"],
    dueAt: r.due_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    status: r.status as CronRunRecord["status"],
    error: r.error,
    tokens: r.tokens,
    outputPreview: r.output_preview,
    delivered: r.delivered === 1,
    sessionKey: r.session_key,
    outcome: outcomeOf(r),
    lateMs: r.late_ms,
    covers: r.covers,
    resumeOf: r.resume_of,
  };
}

function parseSpec(text: string): { ok: true; job: CronJobDef } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `stored job is not JSON: ${(err as Error).message}` };
  }
  const r = cronJobSchema.safeParse(raw);
  if (!r.success) return { ok: false, error: r.error.issues.map((i) => i.message).join("; ") };
  return { ok: true, job: r.data };
}
