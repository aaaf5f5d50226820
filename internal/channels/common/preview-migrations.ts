import type { Migration } from "../../store/migrations.js";

/**
 * Streaming previews (namespace `previews`): the preview message of every reply being streamed, so
 * one left behind by a crash (kill -9 mid-stream) is found and removed after the restart; and the
 * chat turns whose final answer is not delivered yet, so a stored answer a crash kept from its chat
 * is sent after the restart.
 */
export const previewMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "open streaming preview messages",
    sql: `
CREATE TABLE chat_previews (
  channel TEXT NOT NULL,
  chat TEXT NOT NULL,
  message_id TEXT NOT NULL,
  session_key TEXT,
  boot TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  finalizing INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (channel, chat, message_id)
);
`,
  },
  {
    version: 2,
    description: "chat turns whose final answer is not delivered yet",
    sql: `
CREATE TABLE chat_deliveries (
  channel TEXT NOT NULL,
  request_id TEXT NOT NULL,
  chat TEXT NOT NULL,
  session_key TEXT NOT NULL,
  boot TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (channel, request_id)
);
`,
  },
];
