/**
 * Usage reports for the console: tokens and cost per day over the last N days, split by agent, model
 * and channel, and the most expensive sessions. Read straight from the `usage` table (one row per
 * model call), so every caller (console, scripts) sees the same numbers `familiar usage` does.
 *
 * Days are the owner's days in `timezone` (config), not UTC days: "today" on the chart is the same
 * day the owner lives in. Rows are pre-aggregated in SQLite into 15-minute buckets (every real time
 * zone offset is a multiple of 15 minutes), so the JS side handles a few thousand rows at most.
 */
import type { Database } from "better-sqlite3";
import { channelOfKey } from "./api/api-json.js";
import { costSql, ESTIMATED_SQL } from "../budgets/spend.js";

/** USD per 1M tokens for calls of a model without a price (`budgets.default_price`). */
export type DefaultPrice = { input: number; output: number };

export type { DailyUsage, SessionCost, UsageSeries } from "./usage-wire.js";
import type { DailyUsage, SessionCost, UsageSeries } from "./usage-wire.js";

const BUCKET_MS = 15 * 60_000;
const DAY_MS = 86_400_000;

/** YYYY-MM-DD of `ms` in `timeZone`. */
function dayFormatter(timeZone: string): (ms: number) => string {
  const f = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" });
  return (ms) => f.format(ms);
}

/** The day labels of the last `days` days ending today in `timeZone`, oldest first. */
export function dayLabels(now: number, days: number, timeZone: string): string[] {
  const fmt = dayFormatter(timeZone);
  const out: string[] = [];
  // Step back by whole days from noon-ish; labels are deduplicated against DST days of 23/25 hours.
  for (let i = days - 1; i >= 0; i--) {
    const label = fmt(now - i * DAY_MS);
    if (out[out.length - 1] !== label) out.push(label);
  }
  return out;
}

interface BucketRow {
  bucket: number;
  agent_id: string | null;
  provider: string;
  model: string;
  session_key: string | null;
  input: number;
  output: number;
  total: number;
  cost: number;
  calls: number;
  estimated: number;
}

/**
 * Builds the daily report of the last `days` days (today included) at `now`. Calls of a model without
 * a price count at `price` (an estimate, counted in `estimatedCalls`), as the budgets count them.
 */
export function dailyUsage(
  db: Database,
  now: number,
  days: number,
  timeZone: string,
  price: DefaultPrice,
): DailyUsage {
  const labels = dayLabels(now, days, timeZone);
  const index = new Map(labels.map((d, i) => [d, i]));
  // Two days of slack before the first label: the bucket filter below drops what falls outside.
  const since = now - (days + 1) * DAY_MS;
  const rows = db
    .prepare<[number, number], BucketRow>(
      `SELECT created_at / ? AS bucket, agent_id, provider, model, session_key,
              SUM(input) AS input, SUM(output) AS output, SUM(total) AS total,
              COALESCE(SUM(${costSql(price)}), 0) AS cost, COUNT(*) AS calls,
              SUM(${ESTIMATED_SQL}) AS estimated
         FROM usage WHERE created_at >= ?
        GROUP BY bucket, agent_id, provider, model, session_key`,
    )
    .all(BUCKET_MS, since) as BucketRow[];
  const fmt = dayFormatter(timeZone);
  const empty = (): number[] => labels.map(() => 0);
  const totals = { cost: empty(), tokens: empty(), calls: empty(), estimatedCalls: empty() };
  const splits = { agent: new Map<string, UsageSeries>(), model: new Map(), channel: new Map() } as Record<
    "agent" | "model" | "channel",
    Map<string, UsageSeries>
  >;
  const add = (split: "agent" | "model" | "channel", key: string, i: number, r: BucketRow): void => {
    let s = splits[split].get(key);
    if (!s) splits[split].set(key, (s = { key, cost: empty(), tokens: empty() }));
    s.cost[i]! += r.cost;
    s.tokens[i]! += r.total;
  };
  const today = { cost: 0, tokens: 0, input: 0, output: 0, calls: 0, estimatedCalls: 0 };
  const todayIndex = labels.length - 1;
  let firstMs = Number.POSITIVE_INFINITY;
  for (const r of rows) {
    const i = index.get(fmt(r.bucket * BUCKET_MS));
    if (i === undefined) continue;
    firstMs = Math.min(firstMs, r.bucket * BUCKET_MS);
    totals.cost[i]! += r.cost;
    totals.tokens[i]! += r.total;
    totals.calls[i]! += r.calls;
    totals.estimatedCalls[i]! += r.estimated;
    add("agent", r.agent_id ?? "(none)", i, r);
    add("model", `${r.provider}/${r.model}`, i, r);
    add("channel", r.session_key ? channelOfKey(r.session_key) : "(none)", i, r);
    if (i === todayIndex) {
      today.cost += r.cost;
      today.tokens += r.total;
      today.input += r.input;
      today.output += r.output;
      today.calls += r.calls;
      today.estimatedCalls += r.estimated;
    }
  }
  const sorted = (m: Map<string, UsageSeries>): UsageSeries[] =>
    [...m.values()].sort((a, b) => sum(b.cost) - sum(a.cost) || sum(b.tokens) - sum(a.tokens));
  return {
    since: Number.isFinite(firstMs) ? firstMs : since,
    timezone: timeZone,
    days: labels,
    totals,
    byAgent: sorted(splits.agent),
    byModel: sorted(splits.model),
    byChannel: sorted(splits.channel),
    today,
    defaultPrice: { input: price.input, output: price.output },
  };
}

function sum(xs: number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s;
}

/** The `limit` sessions that cost the most since `since` (ties: more tokens first); costs as in dailyUsage. */
export function topSessions(db: Database, since: number, limit: number, price: DefaultPrice): SessionCost[] {
  const rows = db
    .prepare<
      [number, number],
      {
        session_id: string;
        session_key: string | null;
        agent_id: string | null;
        cost: number;
        tokens: number;
        calls: number;
        estimated: number;
        last_at: number;
      }
    >(
      `SELECT session_id, MAX(session_key) AS session_key, MAX(agent_id) AS agent_id,
              COALESCE(SUM(${costSql(price)}), 0) AS cost, SUM(total) AS tokens, COUNT(*) AS calls,
              SUM(${ESTIMATED_SQL}) AS estimated, MAX(created_at) AS last_at
         FROM usage WHERE created_at >= ? AND session_id IS NOT NULL
        GROUP BY session_id ORDER BY cost DESC, tokens DESC LIMIT ?`,
    )
    .all(since, limit);
  const topRequest = db.prepare<[string, number], { request_id: string }>(
    `SELECT request_id FROM usage WHERE session_id = ? AND created_at >= ? AND request_id IS NOT NULL
      GROUP BY request_id ORDER BY COALESCE(SUM(${costSql(price)}), 0) DESC, SUM(total) DESC LIMIT 1`,
  );
  return rows.map((r) => ({
    sessionId: r.session_id,
    sessionKey: r.session_key,
    agentId: r.agent_id,
    cost: r.cost,
    tokens: r.tokens,
    calls: r.calls,
    estimatedCalls: r.estimated,
    lastAt: r.last_at,
    topRequestId: topRequest.get(r.session_id, since)?.request_id ?? null,
  }));
}
