import type { Migration } from "./migrations.js";

/** Core tables: sessions (with lineage), messages, usage, call-tree traces, key/value state. */
export const coreMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "sessions, messages, usage, traces, kv",
    sql: `
CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  key TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  archived_at INTEGER,
  parent_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
  successor_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
  reset_reason TEXT,
  model_override TEXT,
  compact_strategy TEXT,
  compact_keep_last_n INTEGER,
  compact_observation_mask INTEGER,
  compact_summary_model TEXT,
  origin TEXT,
  meta TEXT
);
CREATE INDEX sessions_key ON sessions(key, created_at);
CREATE TABLE session_heads (
  key TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE
);
CREATE TABLE messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  content TEXT NOT NULL DEFAULT '',
  parts TEXT,
  tool_calls TEXT,
  tool_call_id TEXT,
  tool_name TEXT,
  model TEXT,
  finish_reason TEXT,
  status TEXT NOT NULL DEFAULT 'ok',
  usage TEXT,
  request_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, id);
CREATE TABLE usage (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT,
  session_key TEXT,
  agent_id TEXT,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  request_id TEXT,
  input INTEGER NOT NULL DEFAULT 0,
  output INTEGER NOT NULL DEFAULT 0,
  cache_read INTEGER NOT NULL DEFAULT 0,
  cache_write INTEGER NOT NULL DEFAULT 0,
  reasoning INTEGER NOT NULL DEFAULT 0,
  total INTEGER NOT NULL DEFAULT 0,
  cost REAL,
  created_at INTEGER NOT NULL
);
CREATE INDEX usage_time ON usage(created_at);
CREATE INDEX usage_session ON usage(session_id);
CREATE INDEX usage_request ON usage(request_id);
CREATE TABLE traces (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  parent_request_id TEXT,
  root_request_id TEXT NOT NULL,
  depth INTEGER NOT NULL DEFAULT 0,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  session_id TEXT,
  agent_id TEXT,
  status TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  meta TEXT
);
CREATE INDEX traces_root ON traces(root_request_id);
CREATE INDEX traces_request ON traces(request_id);
`,
  },
  {
    version: 2,
    description: "sessions.tail_kind: the kind of the newest message, kept by every append",
    // NULL (every session before this migration, and sessions written by other paths) means unknown:
    // readers then look at the messages themselves.
    sql: "ALTER TABLE sessions ADD COLUMN tail_kind TEXT;",
  },
];
