/**
 * Every migration namespace the daemon knows. The store knows no feature: each feature keeps its
 * migrations in its own dependency-free `*-migrations.ts` file, and the wiring root (this file, with
 * one line per feature) hands them all to `openDatabase` at start-up. Offline CLI commands that open
 * the database use the same list, so they see the same schema.
 */
import type { MigrationSets } from "../store/migrations.js";
import { coreMigrations } from "../store/core-migrations.js";
import { cronMigrations } from "../cron/cron-migrations.js";
import { heartbeatMigrations } from "../heartbeat/heartbeat-migrations.js";
import { subagentMigrations } from "../agent/subagents/subagent-migrations.js";
import { engineMigrations } from "../agent/engines/engine-migrations.js";
import { agentsMigrations } from "../agent/catalog/agents-migrations.js";
import { pairingMigrations } from "../channels/common/pairing-migrations.js";
import { previewMigrations } from "../channels/common/preview-migrations.js";
import { telegramMigrations } from "../channels/telegram/telegram-migrations.js";
import { discordMigrations } from "../channels/discord/discord-migrations.js";
import { compactionMigrations } from "../agent/compaction/compaction-migrations.js";
import { memoryMigrations } from "../memory/memory-migrations.js";
import { budgetMigrations } from "../budgets/budget-migrations.js";
import { gatewayMigrations } from "../gateway/turn-idempotency-migrations.js";
import { taintMigrations } from "../tools/taint/taint-migrations.js";

export const allMigrations: MigrationSets = {
  core: coreMigrations,
  cron: cronMigrations,
  heartbeat: heartbeatMigrations,
  subagents: subagentMigrations,
  engines: engineMigrations,
  agents: agentsMigrations,
  pairing: pairingMigrations,
  previews: previewMigrations,
  telegram: telegramMigrations,
  discord: discordMigrations,
  compaction: compactionMigrations,
  memory: memoryMigrations,
  budgets: budgetMigrations,
  gateway: gatewayMigrations,
  taint: taintMigrations,
};
