import type { Migration } from "../../store/migrations.js";

/**
 * Discord (namespace `discord`): ids of gateway messages and interactions already handled, so a
 * duplicate delivery (a replay after RESUME, even after a daemon restart) is answered once.
 */
export const discordMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "discord handled message and interaction ids",
    sql: `
CREATE TABLE discord_seen (
  id TEXT PRIMARY KEY,
  seen_at INTEGER NOT NULL
);
CREATE INDEX discord_seen_at ON discord_seen(seen_at);
`,
  },
];
