import type { Migration } from "../store/migrations.js";

/** Heartbeat run log (namespace `heartbeat`): one row per run, skipped or not. */
export const heartbeatMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "heartbeat runs",
    sql: `
CREATE TABLE heartbeat_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  ended_at INTEGER,
  status TEXT NOT NULL,
  reason TEXT,
  tokens INTEGER NOT NULL DEFAULT 0,
  delivered INTEGER NOT NULL DEFAULT 0,
  target TEXT,
  output_preview TEXT
);
CREATE INDEX heartbeat_runs_at ON heartbeat_runs(at);
`,
  },
];
