import type { Migration } from "../../store/migrations.js";

/**
 * Namespace `compaction`: one row per compaction, linking the archived source session to its
 * successor. Session references are nullable with ON DELETE SET NULL so an explicit session delete
 * (gateway DELETE) still works; compaction itself never deletes anything.
 */
export const compactionMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "compaction_summaries",
    sql: `
CREATE TABLE compaction_summaries (
  id TEXT PRIMARY KEY,
  source_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
  successor_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
  summary TEXT NOT NULL,
  level TEXT NOT NULL,
  tokens_before INTEGER NOT NULL,
  tokens_after INTEGER NOT NULL,
  messages_summarised INTEGER NOT NULL,
  instructions TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX compaction_summaries_source ON compaction_summaries(source_session_id);
CREATE INDEX compaction_summaries_successor ON compaction_summaries(successor_session_id);
`,
  },
];
