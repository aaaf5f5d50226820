import type { Migration } from "../../store/migrations.js";

/** CLI engine state: the claude-cli session id per session key (resume after reap/crash/restart). */
export const engineMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "claude-cli session ids",
    sql: `CREATE TABLE claude_sessions (
  session_key TEXT PRIMARY KEY,
  cli_session_id TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);`,
  },
];
