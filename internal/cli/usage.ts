/**
 * `familiar usage [--since 7d|ISO] [--json] [--config PATH]`: token usage and cost from the SQLite
 * store. Opens `<data_dir>/familiar.db` read-only and never migrates, so it is safe while the daemon
 * runs (WAL lets readers and the writer proceed together).
 */
import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../config/load.js";
import { parseDuration } from "../config/duration.js";
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import {
  UsageTracker,
  type DayUsage,
  type ModelUsage,
  type SessionUsage,
  type UsageTotals,
} from "../agent/usage/usage-tracker.js";
import { BudgetGuard, formatAmount, type LimitState } from "../budgets/budget-guard.js";
import { formatReset } from "../budgets/periods.js";
import { estimateReason, formatUsd } from "../core/money.js";

export interface UsageCommandOptions {
  config: string;
  since?: string;
  json?: boolean;
}

/** What `familiar usage --json` prints. */
export interface UsageReport {
  since: string;
  until: string;
  timezone: string;
  database: string;
  total: UsageTotals;
  byModel: ModelUsage[];
  byDay: DayUsage[];
  sessions: SessionUsage[];
  /** Every configured budget limit with its spend in the current period (internal/budgets). */
  budgets: LimitState[];
  /** Share of input tokens served from the provider's prompt cache in the period; null with no input. */
  cacheHitRate: number | null;
  /** `budgets.default_price`: what each of `total.unpricedCalls` counts at (USD per 1M tokens). */
  defaultPrice: { input: number; output: number };
}

export const DEFAULT_SINCE = "30d";

/** Parses `--since`: a duration back from now (`7d`, `12h`) or an ISO date/time. */
export function parseSince(value: string, now: number): number {
  const v = value.trim();
  if (/^\d/.test(v) && !/^\d{4}-\d{2}/.test(v)) {
    const ms = parseDuration(v);
    if (ms !== undefined) return now - ms;
  }
  const at = Date.parse(v);
  if (!Number.isNaN(at)) return at;
  throw new Error(
    `--since expects a duration such as 7d or 12h, or an ISO date such as 2026-01-31; got "${value}"`,
  );
}

/** Builds the report from an open database (read-only is fine). */
export function buildUsageReport(db: Db, config: Config, since: number, now: number, file = ""): UsageReport {
  const hasTable =
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage'").get() !== undefined;
  const tracker = new UsageTracker({ db, config: () => config });
  const total = hasTable ? tracker.aggregate(since) : zeroTotals();
  return {
    since: new Date(since).toISOString(),
    until: new Date(now).toISOString(),
    timezone: config.timezone,
    database: file,
    total,
    byModel: hasTable ? tracker.byModel(since) : [],
    byDay: hasTable ? tracker.byDay(since) : [],
    sessions: hasTable ? tracker.bySession(since, 20) : [],
    budgets: hasTable ? budgetStates(db, config, now) : [],
    cacheHitRate: total.input > 0 ? total.cacheRead / total.input : null,
    defaultPrice: config.budgets.default_price,
  };
}

/** Budget limits now; a store not yet migrated for budgets (no payer columns) shows none. */
export function budgetStates(db: Db, config: Config, now: number): LimitState[] {
  try {
    return new BudgetGuard({ db, config: () => config, now: () => now }).status();
  } catch {
    return [];
  }
}

function zeroTotals(): UsageTotals {
  return {
    calls: 0,
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    total: 0,
    cost: 0,
    unpricedCalls: 0,
  };
}

const n = (v: number): string => v.toLocaleString("en-US");
/** One money format (core/money.ts); "≈" when some calls had no price and count at the default price. */
const money = (t: UsageTotals): string => formatUsd(t.cost, t.unpricedCalls > 0);

function row(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [row(head, widths), ...rows.map((r) => row(r, widths))];
}

const cols = (label: string, t: UsageTotals): string[] => [
  label,
  n(t.calls),
  n(t.input),
  n(t.cacheRead),
  n(t.output),
  n(t.total),
  money(t),
];
const HEAD = ["", "calls", "input", "cached", "output", "total", "cost"];

/** Renders the report for humans. */
export function formatUsageReport(r: UsageReport): string {
  const lines: string[] = [];
  lines.push(`usage since ${r.since} (${r.timezone})`);
  if (r.budgets.length > 0)
    lines.push(
      "",
      ...table(
        ["budget", "period", "spent", "limit", "used", "resets"],
        r.budgets.map((b) => [
          b.label,
          b.period,
          formatAmount(b.spent, b.unit),
          formatAmount(b.limit, b.unit),
          `${Math.floor(b.fraction * 100)}%`,
          formatReset(b.resetsAt, r.timezone),
        ]),
      ),
    );
  if (r.total.calls === 0) {
    lines.push("no model calls recorded in this period");
    return lines.join("\n") + "\n";
  }
  if (r.cacheHitRate !== null)
    lines.push(
      "",
      `prompt cache: ${(r.cacheHitRate * 100).toFixed(1)}% of input tokens were read from the provider's cache`,
    );
  lines.push("", ...table(HEAD, [cols("total", r.total)]));
  lines.push(
    "",
    ...table(
      ["model", ...HEAD.slice(1)],
      r.byModel.map((m) => cols(`${m.provider}/${m.model}`, m)),
    ),
  );
  lines.push(
    "",
    ...table(
      ["day", ...HEAD.slice(1)],
      r.byDay.map((d) => cols(d.day, d)),
    ),
  );
  if (r.total.unpricedCalls > 0) lines.push("", estimateReason(r.total.unpricedCalls, r.defaultPrice));
  return lines.join("\n") + "\n";
}

/** Runs the command. */
export async function usageCommand(
  opts: UsageCommandOptions,
  out: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const { config } = loadConfigFile(opts.config, process.env, { deferSecrets: true });
  const now = Date.now();
  const since = parseSince(opts.since ?? DEFAULT_SINCE, now);
  const file = join(config.data_dir, "familiar.db");
  let report: UsageReport;
  if (!existsSync(file)) {
    report = {
      since: new Date(since).toISOString(),
      until: new Date(now).toISOString(),
      timezone: config.timezone,
      database: file,
      total: zeroTotals(),
      byModel: [],
      byDay: [],
      sessions: [],
      budgets: [],
      cacheHitRate: null,
      defaultPrice: config.budgets.default_price,
    };
  } else {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      db.pragma("busy_timeout = 5000");
      report = buildUsageReport(db, config, since, now, file);
    } finally {
      db.close();
    }
  }
  out.write(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatUsageReport(report));
}
