import type { Migration } from "../../store/migrations.js";

/**
 * Prompt-injection containment: the taint of each session lineage (a session and its compacted
 * successors share one lineage, so a summary of tainted text stays tainted), the owner's grants,
 * and the memory entries written by tainted turns.
 */
export const taintMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "session taint sources, approval grants, tainted memory entries",
    sql: `
CREATE TABLE session_taint (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  lineage_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL,
  request_id TEXT,
  at INTEGER NOT NULL
);
CREATE UNIQUE INDEX session_taint_source ON session_taint(lineage_id, kind, detail);
CREATE TABLE approval_grants (
  id TEXT PRIMARY KEY,
  lineage_id TEXT NOT NULL,
  session_key TEXT NOT NULL,
  sink TEXT NOT NULL,
  target TEXT NOT NULL,
  scope TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX approval_grants_lineage ON approval_grants(lineage_id);
CREATE TABLE memory_taint (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  path TEXT NOT NULL,
  text TEXT NOT NULL,
  session_id TEXT NOT NULL,
  sources TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  purged_at INTEGER
);
`,
  },
];
