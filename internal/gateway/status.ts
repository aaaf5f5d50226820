/**
 * The `status` method's report (what `familiar status` prints): uptime, channels, models and their
 * cooldowns, queue depth, today's tokens, the next heartbeat and cron runs. Optional parts are asked
 * only when registered; their absence is reported, never guessed.
 */
import type { GatewayRuntime } from "./runtime.js";
import { costSql, ESTIMATED_SQL } from "../budgets/spend.js";

/** Usage totals; `cost` counts calls of a model without a price at the default price (`estimatedCalls`). */
export interface UsageSince {
  input: number;
  output: number;
  cacheRead: number;
  total: number;
  cost: number;
  calls: number;
  estimatedCalls: number;
}
import { readLastBackup } from "../store/last-backup.js";

/** Local midnight of `now` (the owner's day, as the server sees it). */
export function startOfDay(now: number): number {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/** Usage totals since `since` from the core usage table. */
export function usageSince(rt: GatewayRuntime, since: number): UsageSince {
  const price = rt.ctx.config().budgets.default_price;
  const row = rt.ctx.db
    .prepare<[number], UsageSince>(
      `SELECT COALESCE(SUM(input),0) AS input, COALESCE(SUM(output),0) AS output, COALESCE(SUM(cache_read),0) AS cacheRead,
       COALESCE(SUM(total),0) AS total, COALESCE(SUM(${costSql(price)}),0) AS cost, COUNT(*) AS calls,
       COALESCE(SUM(${ESTIMATED_SQL}),0) AS estimatedCalls FROM usage WHERE created_at >= ?`,
    )
    .get(since);
  return row ?? { input: 0, output: 0, cacheRead: 0, total: 0, cost: 0, calls: 0, estimatedCalls: 0 };
}

function safe(fn: () => unknown): unknown {
  try {
    return fn();
  } catch (err) {
    return { state: "error", detail: (err as Error).message };
  }
}

export async function buildStatus(rt: GatewayRuntime, wsClients: number): Promise<Record<string, unknown>> {
  const cfg = rt.ctx.config();
  const now = rt.ctx.clock.now();
  const host = rt.maybeHost();
  const { cron, router, heartbeat } = rt.deps;
  const models = router ? safe(() => router.status()) : undefined;
  return {
    uptimeS: Math.round((Date.now() - rt.ctx.startedAt) / 1000),
    pid: process.pid,
    defaultAgent: cfg.agents.default,
    primaryModel: cfg.models.primary ?? null,
    fallbacks: cfg.models.fallbacks,
    models: models ?? { state: "unknown", detail: "model router status not available" },
    channels: rt.deps.channels.statuses(),
    queueDepth: host ? host.queueDepth() : null,
    tokensToday: usageSince(rt, startOfDay(now)),
    heartbeat: heartbeat
      ? safe(() => heartbeat.status())
      : { state: "unknown", detail: "heartbeat not running" },
    cron: cron
      ? await Promise.resolve(safe(() => cron.list()))
      : { state: "unknown", detail: "scheduler not running" },
    disk: rt.deps.disk ? safe(() => rt.deps.disk?.health()) : { state: "unknown", detail: "not watched" },
    // The last backup (manual or scheduled), for the console's overview.
    backup: { enabled: cfg.backup.enabled, last: readLastBackup(rt.ctx.db) },
    gatewayClients: wsClients,
    configError: rt.deps.config.error() ?? null,
    // Restart-only keys edited in config.yaml since start: the daemon still runs with the old values.
    pendingRestart: rt.deps.config.pendingRestart(),
  };
}
