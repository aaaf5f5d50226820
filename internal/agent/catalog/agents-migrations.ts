import type { Migration } from "../../store/migrations.js";

/** Agents created over the API. */
export const agentsMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "api agents",
    sql: `CREATE TABLE api_agents (
  id TEXT PRIMARY KEY,
  def TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);`,
  },
];
