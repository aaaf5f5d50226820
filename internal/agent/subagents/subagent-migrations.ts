import type { Migration } from "../../store/migrations.js";

/** Async subagent tasks: persisted so a restart reports running tasks as interrupted. */
export const subagentMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "subagent tasks",
    sql: `
CREATE TABLE subagent_tasks (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  message TEXT NOT NULL,
  model TEXT,
  status TEXT NOT NULL,
  depth INTEGER NOT NULL,
  origin_session_key TEXT NOT NULL,
  origin_agent_id TEXT,
  origin_channel TEXT,
  reply_target TEXT,
  parent_request_id TEXT,
  result TEXT,
  error TEXT,
  announce_status TEXT,
  announce_error TEXT,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER
);
CREATE INDEX subagent_tasks_status ON subagent_tasks(status);
`,
  },
  {
    version: 2,
    description: "subagent task chains (a task started by the announcement of an earlier one)",
    sql: "ALTER TABLE subagent_tasks ADD COLUMN chain INTEGER NOT NULL DEFAULT 0;",
  },
  {
    version: 3,
    description:
      "the sessions a background dispatch's tasks ran in (named and read by its announcement), and whether its origin was a shared chat",
    sql: `
ALTER TABLE subagent_tasks ADD COLUMN sessions TEXT;
ALTER TABLE subagent_tasks ADD COLUMN withhold_private INTEGER NOT NULL DEFAULT 0;
`,
  },
];
