import type { Migration } from "../store/migrations.js";

/**
 * Memory search index: FTS5 over workspace memory files (MEMORY.md, memory/*.md) and past session
 * transcripts (the core `messages` table, synced incrementally by message id).
 */
export const memoryMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "memory FTS5 index, file and sync state",
    sql: `
CREATE VIRTUAL TABLE memory_fts USING fts5(
  body,
  title UNINDEXED,
  source UNINDEXED,
  ref UNINDEXED,
  line UNINDEXED,
  tokenize = 'porter unicode61'
);
CREATE TABLE memory_files (
  path TEXT PRIMARY KEY,
  mtime_ms INTEGER NOT NULL,
  size INTEGER NOT NULL,
  hash TEXT NOT NULL
);
CREATE TABLE memory_state (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
`,
  },
];
