/**
 * The usage ledger: one row per billed call in the core `usage` table (model calls, embeddings,
 * transcription, speech, CLI engines, failed attempts the provider counted), so totals survive
 * restarts. Each row holds the one figure every surface shows (models/call-cost.ts: the provider's
 * figure, else the counts at the model's price, else the default price, else an estimate) with how it
 * was made (`cost_source`) and what caused it (`kind`, request, session, job, agent). A model with no
 * price is said once per process, loudly, with the default it counts at.
 *
 * Read methods work on a read-only connection too (the CLI reads while the daemon runs), also on a
 * store not yet migrated for the ledger columns.
 *
 * Over 300 lines on purpose: the one writer of the usage ledger; every call's row, its cause and its
 * one cost figure are made here together so no surface can price a call differently (docs/costs.md).
 */
import type { Config } from "../../config/schema.js";
import type { Statement } from "better-sqlite3";
import type { Db } from "../../store/db.js";
import { classifyStoreError } from "../../store/db.js";
import { systemClock, type Clock } from "../../core/clock.js";
import { addUsage } from "../../core/usage.js";
import type { Usage } from "../../models/types.js";
import { priceCall, type CostSource } from "../../models/call-cost.js";
import type { ModelPrice } from "../../models/price-table.js";
import { costSql, ESTIMATED_SQL, ESTIMATED_SQL_OLD, hasLedgerColumns } from "../../budgets/spend.js";

/** One model call to record. */
export interface UsageRecordInput {
  sessionId?: string | null;
  sessionKey?: string | null;
  agentId?: string | null;
  provider: string;
  model: string;
  requestId?: string | null;
  usage: Usage;
  /**
   * The provider's own figure (USD) when it reported one; the call is priced by models/call-cost.ts
   * when undefined or null.
   */
  cost?: number | null;
  /**
   * How `cost` was made, when the caller already priced the call with models/call-cost.ts (the turn
   * recorder, which shows the figure before it is stored): stored as given, never priced again.
   */
  costSource?: CostSource;
  /** The counts were estimated from the text (the provider reported none). */
  estimated?: boolean;
  /** What caused the call (see budget-migrations.ts, version 3). */
  kind?: string;
  /** The cron job that caused it. */
  jobId?: string | null;
  /** The provider's id of the call. */
  callId?: string | null;
  /** Audio seconds (transcription) or characters (speech), priced per minute or per character. */
  seconds?: number;
  chars?: number;
  /** A price that wins over `models.pricing` (media's own `price_per_minute`, ...). */
  price?: ModelPrice;
  /** Epoch ms; defaults to the clock's now. */
  at?: number;
  /** Who pays (internal/budgets): the channel, agent and session key of the call tree's root turn. */
  channel?: string | null;
  payerAgent?: string | null;
  payerSession?: string | null;
}

/**
 * Summed usage over some calls. `cost` (USD) counts calls of a model without a price at
 * `budgets.default_price`, like the budgets do: then it is an estimate (`unpricedCalls` > 0).
 */
export interface UsageTotals extends Usage {
  calls: number;
  cost: number;
  /** Calls of a model without a configured price, counted in `cost` at the default price. */
  unpricedCalls: number;
}

export interface ModelUsage extends UsageTotals {
  provider: string;
  model: string;
}

export interface DayUsage extends UsageTotals {
  /** `YYYY-MM-DD` in the configured time zone. */
  day: string;
}

export interface SessionUsage extends UsageTotals {
  sessionId: string | null;
  sessionKey: string | null;
  agentId: string | null;
  lastAt: number;
}

interface TotalsRow {
  calls: number;
  input: number | null;
  output: number | null;
  cache_read: number | null;
  cache_write: number | null;
  reasoning: number | null;
  total: number | null;
  cost: number | null;
  unpriced: number | null;
}

/** The sums of a totals row; unpriced calls count at the default price (budgets/spend.ts). */
const sums = (price: Config["budgets"]["default_price"], estimated: string): string =>
  `COUNT(*) AS calls, SUM(input) AS input, SUM(output) AS output, SUM(cache_read) AS cache_read,
  SUM(cache_write) AS cache_write, SUM(reasoning) AS reasoning, SUM(total) AS total,
  SUM(${costSql(price)}) AS cost, SUM(${estimated}) AS unpriced`;

function totals(r: TotalsRow | undefined): UsageTotals {
  return {
    calls: r?.calls ?? 0,
    input: r?.input ?? 0,
    output: r?.output ?? 0,
    cacheRead: r?.cache_read ?? 0,
    cacheWrite: r?.cache_write ?? 0,
    reasoning: r?.reasoning ?? 0,
    total: r?.total ?? 0,
    cost: r?.cost ?? 0,
    unpricedCalls: r?.unpriced ?? 0,
  };
}

function add(a: UsageTotals, b: UsageTotals): UsageTotals {
  return {
    ...addUsage(a, b),
    calls: a.calls + b.calls,
    cost: a.cost + b.cost,
    unpricedCalls: a.unpricedCalls + b.unpricedCalls,
  };
}

// Every real UTC offset is a multiple of 15 minutes, so 15-minute buckets never straddle a local midnight.
const BUCKET_MS = 15 * 60_000;

export interface UsageTrackerOptions {
  db: Db;
  config: () => Config;
  clock?: Clock;
  /** Says, once per model and process, that a model has no price and what it counts at. */
  warn?: (message: string) => void;
}

/** Models already said to have no price (once per process, whatever tracker records them). */
const saidUnpriced = new Set<string>();

/** Records and queries token usage. */
export class UsageTracker {
  private readonly db: Db;
  private readonly config: () => Config;
  private readonly clock: Clock;
  private insertStmt: Statement<unknown[]> | undefined;
  private readonly warn: ((message: string) => void) | undefined;

  constructor(opts: UsageTrackerOptions) {
    this.db = opts.db;
    this.config = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.warn = opts.warn;
  }

  /** The ledger figure of a call as {@link record} would store it, without storing it. */
  price(input: UsageRecordInput): { cost: number; source: CostSource } {
    if (input.costSource !== undefined && typeof input.cost === "number")
      return { cost: input.cost, source: input.costSource };
    const cfg = this.config();
    const withOwn = input.price
      ? { ...cfg, models: { ...cfg.models, pricing: { [`${input.provider}/${input.model}`]: input.price } } }
      : cfg;
    return priceCall(withOwn, {
      provider: input.provider,
      model: input.model,
      usage: input.usage,
      reported: input.cost ?? undefined,
      estimatedUsage: input.estimated,
      seconds: input.seconds,
      chars: input.chars,
    });
  }

  /** Records one call; returns the row id, its ledger figure and how it was made. */
  record(input: UsageRecordInput): { id: number; cost: number; source: CostSource } {
    const u = input.usage;
    const { cost, source } = this.price(input);
    if (source === "default") this.sayUnpriced(input.provider, input.model);
    try {
      // Prepared lazily so a read-only connection (the CLI) can still build a tracker.
      this.insertStmt ??= this.db.prepare<unknown[]>(
        `INSERT INTO usage (session_id, session_key, agent_id, provider, model, request_id, input, output,
           cache_read, cache_write, reasoning, total, cost, created_at, channel, payer_agent, payer_session,
           cost_source, kind, job_id, call_id, units)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const res = this.insertStmt.run(
        input.sessionId ?? null,
        input.sessionKey ?? null,
        input.agentId ?? null,
        input.provider,
        input.model,
        input.requestId ?? null,
        u.input,
        u.output,
        u.cacheRead,
        u.cacheWrite,
        u.reasoning,
        u.total,
        cost,
        input.at ?? this.clock.now(),
        input.channel ?? null,
        input.payerAgent ?? null,
        input.payerSession ?? null,
        source,
        input.kind ?? null,
        input.jobId ?? null,
        input.callId ?? null,
        input.seconds ?? input.chars ?? null,
      );
      return { id: Number(res.lastInsertRowid), cost, source };
    } catch (err) {
      throw classifyStoreError(err);
    }
  }

  private sayUnpriced(provider: string, model: string): void {
    const ref = `${provider}/${model}`;
    if (saidUnpriced.has(ref)) return;
    saidUnpriced.add(ref);
    const d = this.config().budgets.default_price;
    this.warn?.(
      `NO PRICE for ${ref}: neither models.pricing nor the shipped table knows it, so its calls are ` +
        `counted at budgets.default_price ($${d.input} input / $${d.output} output per 1M tokens) and ` +
        `marked estimated. Add models.pricing["${ref}"] (0 for a local model) so costs match the bill.`,
    );
  }

  private estimatedSql: string | undefined;

  private sums(): string {
    this.estimatedSql ??= hasLedgerColumns(this.db) ? ESTIMATED_SQL : ESTIMATED_SQL_OLD;
    return sums(this.config().budgets.default_price, this.estimatedSql);
  }

  /** Totals of one session id. */
  session(sessionId: string): UsageTotals {
    return totals(
      this.db
        .prepare<[string], TotalsRow>(`SELECT ${this.sums()} FROM usage WHERE session_id = ?`)
        .get(sessionId),
    );
  }

  /** Totals of a session key across resets (every session id that key ever had). */
  sessionKey(key: string, since = 0): UsageTotals {
    return totals(
      this.db
        .prepare<[string, number], TotalsRow>(
          `SELECT ${this.sums()} FROM usage WHERE session_key = ? AND created_at >= ?`,
        )
        .get(key, since),
    );
  }

  /** Totals of the calls made for the given request ids (a turn and its subagents). */
  requests(requestIds: readonly string[]): UsageTotals {
    let out = totals(undefined);
    const stmt = this.db.prepare<[string], TotalsRow>(
      `SELECT ${this.sums()} FROM usage WHERE request_id = ?`,
    );
    for (const id of new Set(requestIds)) out = add(out, totals(stmt.get(id)));
    return out;
  }

  /** Totals of everything since `since` (epoch ms, default all time). */
  aggregate(since = 0): UsageTotals {
    return totals(
      this.db
        .prepare<[number], TotalsRow>(`SELECT ${this.sums()} FROM usage WHERE created_at >= ?`)
        .get(since),
    );
  }

  /** Per model since `since`, most tokens first. */
  byModel(since = 0): ModelUsage[] {
    const rows = this.db
      .prepare<[number], TotalsRow & { provider: string; model: string }>(
        `SELECT provider, model, ${this.sums()} FROM usage WHERE created_at >= ? GROUP BY provider, model ORDER BY SUM(total) DESC`,
      )
      .all(since);
    return rows.map((r) => ({ provider: r.provider, model: r.model, ...totals(r) }));
  }

  /** Per session since `since`, most recent first. */
  bySession(since = 0, limit = 50): SessionUsage[] {
    const rows = this.db
      .prepare<
        [number, number],
        TotalsRow & {
          session_id: string | null;
          session_key: string | null;
          agent_id: string | null;
          last_at: number;
        }
      >(
        `SELECT session_id, session_key, agent_id, MAX(created_at) AS last_at, ${this.sums()} FROM usage
         WHERE created_at >= ? GROUP BY session_id ORDER BY last_at DESC LIMIT ?`,
      )
      .all(since, limit);
    return rows.map((r) => ({
      sessionId: r.session_id,
      sessionKey: r.session_key,
      agentId: r.agent_id,
      lastAt: r.last_at,
      ...totals(r),
    }));
  }

  /** Per calendar day in `timeZone` (default: the configured one) since `since`, oldest first. */
  byDay(since = 0, timeZone: string = this.config().timezone): DayUsage[] {
    const rows = this.db
      .prepare<[number, number], TotalsRow & { bucket: number }>(
        `SELECT created_at / ? AS bucket, ${this.sums()} FROM usage WHERE created_at >= ? GROUP BY bucket ORDER BY bucket`,
      )
      .all(BUCKET_MS, since);
    const fmt = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    });
    const days = new Map<string, UsageTotals>();
    for (const r of rows) {
      const day = fmt.format(new Date(Math.floor(r.bucket) * BUCKET_MS));
      days.set(day, add(days.get(day) ?? totals(undefined), totals(r)));
    }
    return [...days].map(([day, t]) => ({ day, ...t }));
  }
}
