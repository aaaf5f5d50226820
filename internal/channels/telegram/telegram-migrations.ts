import type { Migration } from "../../store/migrations.js";

/**
 * Telegram (namespace `telegram`): the polling offset and every received update, so a restart
 * neither replays nor skips one. An update row is written (with its payload) in the same
 * transaction that advances the offset; `handled_at` is set once it was dispatched.
 */
export const telegramMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "telegram offset and received updates",
    sql: `
CREATE TABLE telegram_state (
  bot_id TEXT PRIMARY KEY,
  next_offset INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE telegram_updates (
  bot_id TEXT NOT NULL,
  update_id INTEGER NOT NULL,
  payload TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  handled_at INTEGER,
  PRIMARY KEY (bot_id, update_id)
);
CREATE INDEX telegram_updates_pending ON telegram_updates(bot_id, handled_at);
`,
  },
];
