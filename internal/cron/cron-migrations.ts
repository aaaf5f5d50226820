import type { Migration } from "../store/migrations.js";

/**
 * Cron tables (namespace `cron`):
 * - `cron_jobs`: runtime jobs (tool, gateway, CLI); `spec` is the job as the config schema parses it.
 * - `cron_state`: per job (config and runtime) scheduling state that must survive a restart: when the
 *   schedule started counting (`anchor_at`), the last due instant run (catch-up), failures (backoff),
 *   the last error, and `completed_at` for one-shot `at` jobs.
 * - `cron_runs`: one row per run or skipped run.
 */
export const cronMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "cron jobs, state and runs",
    sql: `
CREATE TABLE cron_jobs (
  id TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE cron_state (
  job_id TEXT PRIMARY KEY,
  schedule_key TEXT NOT NULL,
  anchor_at INTEGER NOT NULL,
  last_due_at INTEGER,
  last_run_at INTEGER,
  last_end_at INTEGER,
  last_status TEXT,
  last_error TEXT,
  failures INTEGER NOT NULL DEFAULT 0,
  completed_at INTEGER
);
CREATE TABLE cron_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  trigger TEXT NOT NULL,
  due_at INTEGER,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  status TEXT NOT NULL,
  error TEXT,
  tokens INTEGER NOT NULL DEFAULT 0,
  output_preview TEXT,
  delivered INTEGER NOT NULL DEFAULT 0,
  session_key TEXT
);
CREATE INDEX cron_runs_job ON cron_runs(job_id, id);
`,
  },
  {
    version: 2,
    description: "cron run outcomes: lateness, missed instants covered, resumed runs",
    // late_ms: set when a run started after LATE_AFTER_MS past its instant; covers: how many scheduled
    // instants the row accounts for (a late run or a skip after downtime covers all it missed);
    // resume_of: the run a crash interrupted that this run resumes (resumed at most once).
    sql: `
ALTER TABLE cron_runs ADD COLUMN late_ms INTEGER;
ALTER TABLE cron_runs ADD COLUMN covers INTEGER NOT NULL DEFAULT 1;
ALTER TABLE cron_runs ADD COLUMN resume_of INTEGER;
`,
  },
  {
    version: 3,
    description: "cron job origins (where a reminder was asked) and undelivered replies",
    // cron_origins: per runtime job, where it was asked: a chat session (kind 'chat', with the channel
    // target when the chat has one) or the CLI (kind 'cli'); its `deliver: origin` goes back there.
    // cron_undelivered: per job, the run whose reply could reach nobody (no chat, no
    // owner.preferred_channel): the owner is warned once per streak and `status` lists it until a
    // later run of the job is delivered.
    sql: `
CREATE TABLE cron_origins (
  job_id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('chat', 'cli')),
  session_key TEXT,
  reply_target TEXT,
  created_at INTEGER NOT NULL
);
CREATE TABLE cron_undelivered (
  job_id TEXT PRIMARY KEY,
  run_id INTEGER NOT NULL,
  since INTEGER NOT NULL
);
`,
  },
];
