/**
 * Spend of one budget scope in the current day and month, read from the `usage` table. A call with no
 * configured price (cost NULL) counts at `budgets.default_price`, never as free; the offline echo
 * model is free.
 */
import type { Statement } from "better-sqlite3";
import type { Db } from "../store/db.js";
import type { Config } from "../config/schema.js";
import type { Usage } from "../models/types.js";
import { findPrice, priceCall } from "../models/call-cost.js";
import type { ModelPrice } from "../models/price-table.js";

/** Who pays for a model call: the turn that started the call tree. */
export interface Payer {
  agentId: string;
  channel: string;
  /** Null for ephemeral turns (one-shot API calls): they count overall, per agent and per channel. */
  sessionKey: string | null;
  /**
   * The turn (and its session) whose work this is, when a turn: work done for it outside its own
   * loop (a compaction summary) names it in the ledger. Not part of any budget scope.
   */
  requestId?: string;
  sessionId?: string | null;
}

/** What a budget limit covers. */
export type Scope =
  | { kind: "overall" }
  | { kind: "agent"; id: string }
  | { kind: "channel"; id: string }
  | { kind: "session"; id: string };

/** Spend in USD and tokens. */
export interface Spend {
  usd: number;
  tokens: number;
}

const COLUMN: Record<Exclude<Scope["kind"], "overall">, string> = {
  agent: "payer_agent",
  channel: "channel",
  session: "payer_session",
};

/** USD of a row: its recorded cost, else the default price; echo is free. Parameters: input, output price. */
const COST_SQL = `CASE WHEN cost IS NOT NULL THEN cost WHEN provider = 'echo' THEN 0
  ELSE (input * ? + output * ?) / 1000000.0 END`;

interface Row {
  day_usd: number | null;
  day_tokens: number | null;
  month_usd: number | null;
  month_tokens: number | null;
}

/** Reads spend per scope; statements are prepared once per scope kind. */
export class SpendReader {
  private stmts = new Map<string, Statement<unknown[], Row>>();

  constructor(private readonly db: Db) {}

  private stmt(kind: Scope["kind"]): Statement<unknown[], Row> {
    let s = this.stmts.get(kind);
    if (!s) {
      const where = kind === "overall" ? "" : `AND ${COLUMN[kind]} = ?`;
      s = this.db.prepare<unknown[], Row>(
        `SELECT SUM(CASE WHEN created_at >= ? THEN ${COST_SQL} END) AS day_usd,
                SUM(CASE WHEN created_at >= ? THEN total END) AS day_tokens,
                SUM(${COST_SQL}) AS month_usd, SUM(total) AS month_tokens
         FROM usage WHERE created_at >= ? ${where}`,
      );
      this.stmts.set(kind, s);
    }
    return s;
  }

  /** Spend of `scope` since `dayStart` and since `monthStart`. */
  spend(
    scope: Scope,
    dayStart: number,
    monthStart: number,
    price: Config["budgets"]["default_price"],
  ): { daily: Spend; monthly: Spend } {
    const args: unknown[] = [dayStart, price.input, price.output, dayStart, price.input, price.output];
    // The month contains the day, so one scan from the month's start serves both sums.
    args.push(monthStart);
    if (scope.kind !== "overall") args.push(scope.id);
    const r = this.stmt(scope.kind).get(...args);
    return {
      daily: { usd: r?.day_usd ?? 0, tokens: r?.day_tokens ?? 0 },
      monthly: { usd: r?.month_usd ?? 0, tokens: r?.month_tokens ?? 0 },
    };
  }
}

/**
 * SQL for the USD of one `usage` row, the one truth every report sums: the recorded cost, else the
 * default price (an estimate), and the offline echo model is free. The price is inlined (finite
 * numbers from the validated config), so the expression works in any statement without parameters.
 */
export function costSql(price: Config["budgets"]["default_price"]): string {
  const num = (n: number): string => (Number.isFinite(n) && n >= 0 ? String(n) : "0");
  return `(CASE WHEN cost IS NOT NULL THEN cost WHEN provider = 'echo' THEN 0
    ELSE (input * ${num(price.input)} + output * ${num(price.output)}) / 1000000.0 END)`;
}

/**
 * SQL: 1 for a row whose cost is an estimate, else 0: a row at the default price (no price) or with
 * counts estimated from the text (`cost_source`), or an older row with no cost (not echo). Before the
 * ledger columns (a read-only look at a store not yet migrated) only the last rule applies.
 */
export const ESTIMATED_SQL = `((cost IS NULL AND provider <> 'echo') OR cost_source IN ('default', 'estimated'))`;
/** {@link ESTIMATED_SQL} for a store without the `cost_source` column (budgets migration 3). */
export const ESTIMATED_SQL_OLD = `(cost IS NULL AND provider <> 'echo')`;

/** True when the store has the ledger columns (`cost_source`, `kind`, ...). */
export function hasLedgerColumns(db: Db): boolean {
  return (
    db
      .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('usage') WHERE name = 'cost_source'")
      .get() !== undefined
  );
}

/** The price of a model (USD per 1M tokens): `models.pricing`, else the shipped table, else null. */
export function knownPrice(cfg: Config, provider: string, model: string): ModelPrice | null {
  return findPrice(cfg, provider, model)?.price ?? null;
}

/** Cost of a call by the ledger's rule (models/call-cost.ts), counts as given. */
export function costWithDefault(cfg: Config, provider: string, model: string, u: Usage): number {
  return priceCall(cfg, { provider, model, usage: u }).cost;
}
