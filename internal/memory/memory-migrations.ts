import type { Migration } from "../store/migrations.js";

/**
 * Memory search index: FTS5 over workspace memory files (MEMORY.md, memory/*.md) and past session
 * transcripts (the core `messages` table, synced incrementally by message id); since v2 every FTS row
 * is a chunk of `memory_chunks` (same rowid), which may also have a vector in `memory_vec`.
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
  {
    version: 2,
    description: "memory chunks with line ranges and content hashes, for hybrid (keyword + vector) search",
    // The FTS rows are rebuilt from the files and transcripts on the next sync (sync state reset).
    // Vectors live in a sqlite-vec table created at run time, once the embedding dimension is known.
    sql: `
DROP TABLE memory_fts;
CREATE VIRTUAL TABLE memory_fts USING fts5(body, heading, source UNINDEXED, tokenize = 'porter unicode61');
-- Headings count half as much as the text (ORDER BY rank uses this, and stays a fast top-k).
INSERT INTO memory_fts (memory_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');
CREATE TABLE memory_chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source TEXT NOT NULL,
  ref TEXT NOT NULL,
  message_id INTEGER,
  heading TEXT NOT NULL DEFAULT '',
  line_start INTEGER,
  line_end INTEGER,
  day TEXT,
  hash TEXT NOT NULL,
  embedded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX memory_chunks_ref ON memory_chunks(source, ref);
CREATE INDEX memory_chunks_pending ON memory_chunks(embedded, source);
CREATE TABLE memory_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
DELETE FROM memory_files;
DELETE FROM memory_state;
`,
  },
];
