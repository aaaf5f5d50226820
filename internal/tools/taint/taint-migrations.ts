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
  {
    version: 2,
    description: "labels that live with the data: what a tainted session wrote, by identity",
    sql: `
CREATE TABLE data_labels (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  session_id TEXT NOT NULL,
  sources TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  cleared_at INTEGER
);
CREATE UNIQUE INDEX data_labels_live ON data_labels(kind, key, session_id) WHERE cleared_at IS NULL;
CREATE INDEX data_labels_kind ON data_labels(kind, cleared_at);
-- Every memory file a tainted turn wrote before labels existed carries its label from now on.
INSERT OR IGNORE INTO data_labels (kind, key, session_id, sources, created_at)
  SELECT 'file', path, session_id, sources, created_at FROM memory_taint WHERE purged_at IS NULL;
`,
  },
];
