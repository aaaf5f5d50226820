import type { Migration } from "../store/migrations.js";

/**
 * Namespace `budgets`: who pays for a model call. `channel`, `payer_agent` and `payer_session` are
 * those of the turn that started the call tree, so a subagent's or a compaction's spend counts
 * against its parent's budget. Rows written before this migration have NULLs and count only overall.
 */
export const budgetMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "usage payer columns",
    sql: `
ALTER TABLE usage ADD COLUMN channel TEXT;
ALTER TABLE usage ADD COLUMN payer_agent TEXT;
ALTER TABLE usage ADD COLUMN payer_session TEXT;
CREATE INDEX usage_payer_time ON usage(created_at, payer_agent, payer_session);
`,
  },
  {
    version: 2,
    description: "drop usage_time (usage_payer_time serves every created_at range)",
    // usage_payer_time starts with created_at, so every "since" query uses it as well; the second
    // index only cost one more page written to the WAL per model call.
    sql: `DROP INDEX IF EXISTS usage_time;`,
  },
  {
    version: 3,
    description: "usage ledger: how each cost was made, what caused the call, the provider's call id",
    // Additive only: a row written before has NULLs (its cost, or the default price when NULL, counts
    // as before). cost_source: reported | priced | default | estimated | free (models/call-cost.ts);
    // kind: what caused the call (turn, tool_loop, subagent, compaction, memory_flush, heartbeat, cron,
    // embedding_index, embedding_search, transcription, speech, failed); job_id: the cron job;
    // call_id: the provider's id of the call (reconciling); units: audio seconds or spoken characters.
    sql: `
ALTER TABLE usage ADD COLUMN cost_source TEXT;
ALTER TABLE usage ADD COLUMN kind TEXT;
ALTER TABLE usage ADD COLUMN job_id TEXT;
ALTER TABLE usage ADD COLUMN call_id TEXT;
ALTER TABLE usage ADD COLUMN units REAL;
`,
  },
];
