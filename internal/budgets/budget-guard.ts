/**
 * The budget guard: before a model call it checks the projected spend against every limit that
 * applies to the payer (overall, its agent, its channel, its session) and refuses the call when a
 * limit would be crossed; after a call it warns the owner once per limit and period at `warn_at`.
 *
 * Limits are read from the current config on every check, so a reload applies at once. "Once per
 * period" is kept in the `kv` table, so a restart does not repeat a warning.
 */
import { formatUsd } from "../core/money.js";
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import type { Limits } from "../config/budget-config.js";
import { formatReset, periodBounds, type Period } from "./periods.js";
import { SpendReader, type Payer, type Scope, type Spend } from "./spend.js";

/** One limit's state in its current period. */
export interface LimitState {
  /** Stable id, e.g. `agent:main:daily_usd`. */
  id: string;
  /** Human label: `overall`, `agent "main"`, `channel telegram`, `session telegram:dm:1`. */
  label: string;
  scope: Scope;
  period: Period;
  unit: "usd" | "tokens";
  limit: number;
  spent: number;
  /** spent / limit */
  fraction: number;
  /** Epoch ms of the period start and of the reset (period end). */
  periodStart: number;
  resetsAt: number;
}

/** A refused call: which limit, the notice for the chat. */
export interface BudgetBlock {
  limit: LimitState;
  /** One plain sentence for the chat: which limit, what was spent, when it resets. */
  notice: string;
}

/** The projected cost of the next call. */
export interface Projection {
  usd: number;
  tokens: number;
}

export interface BudgetGuardOptions {
  db: Db;
  config: () => Config;
  now: () => number;
  /** Sends a warning to a channel target (`budgets.warn_target`); errors are logged by the caller. */
  warn?: (target: string, text: string) => Promise<void>;
  /** Logs a warning line (always, whatever the target). */
  log?: (fields: Record<string, unknown>, msg: string) => void;
}

const KINDS: readonly { key: keyof Limits; period: Period; unit: "usd" | "tokens" }[] = [
  { key: "daily_usd", period: "daily", unit: "usd" },
  { key: "monthly_usd", period: "monthly", unit: "usd" },
  { key: "daily_tokens", period: "daily", unit: "tokens" },
  { key: "monthly_tokens", period: "monthly", unit: "tokens" },
];

function labelOf(scope: Scope): string {
  switch (scope.kind) {
    case "overall":
      return "overall";
    case "agent":
      return `agent "${scope.id}"`;
    case "channel":
      return `channel ${scope.id}`;
    case "session":
      return `session ${scope.id}`;
  }
}

function idOf(scope: Scope): string {
  return scope.kind === "overall" ? "overall" : `${scope.kind}:${scope.id}`;
}

/** `$1.23` (the one money format, core/money.ts) / `12,345 tokens`. */
export function formatAmount(v: number, unit: "usd" | "tokens"): string {
  if (unit === "tokens") return `${Math.round(v).toLocaleString("en-US")} tokens`;
  return formatUsd(v);
}

/** Checks and reports budgets. */
export class BudgetGuard {
  private readonly reader: SpendReader;
  private markStmt: { run: (...a: unknown[]) => { changes: number } } | undefined;

  constructor(private readonly opts: BudgetGuardOptions) {
    this.reader = new SpendReader(opts.db);
  }

  /** The scopes with limits that apply to a payer. */
  private scopesFor(cfg: Config, payer: Payer): { scope: Scope; limits: Limits }[] {
    const b = cfg.budgets;
    const out: { scope: Scope; limits: Limits }[] = [{ scope: { kind: "overall" }, limits: b.overall }];
    const agent = b.agents[payer.agentId];
    if (agent) out.push({ scope: { kind: "agent", id: payer.agentId }, limits: agent });
    const channel = b.channels[payer.channel];
    if (channel) out.push({ scope: { kind: "channel", id: payer.channel }, limits: channel });
    if (payer.sessionKey !== null)
      out.push({ scope: { kind: "session", id: payer.sessionKey }, limits: b.per_session });
    return out.filter((s) => KINDS.some((k) => s.limits[k.key] !== undefined));
  }

  /** Current state of each limit of the given scopes. */
  private states(cfg: Config, scopes: { scope: Scope; limits: Limits }[]): LimitState[] {
    if (scopes.length === 0) return [];
    const now = this.opts.now();
    const day = periodBounds("daily", now, cfg.timezone);
    const month = periodBounds("monthly", now, cfg.timezone);
    const out: LimitState[] = [];
    for (const { scope, limits } of scopes) {
      const spend = this.reader.spend(scope, day.start, month.start, cfg.budgets.default_price);
      for (const k of KINDS) {
        const limit = limits[k.key];
        if (limit === undefined) continue;
        const s: Spend = k.period === "daily" ? spend.daily : spend.monthly;
        const spent = k.unit === "usd" ? s.usd : s.tokens;
        const bounds = k.period === "daily" ? day : month;
        out.push({
          id: `${idOf(scope)}:${k.key}`,
          label: labelOf(scope),
          scope,
          period: k.period,
          unit: k.unit,
          limit,
          spent,
          fraction: spent / limit,
          periodStart: bounds.start,
          resetsAt: bounds.end,
        });
      }
    }
    return out;
  }

  /**
   * Checks a call about to be made. Returns the first limit it would cross (already reached, or
   * reached by the projected cost of this call), or undefined when the call may go ahead.
   */
  check(payer: Payer, projection: Projection | (() => Projection)): BudgetBlock | undefined {
    const cfg = this.opts.config();
    const states = this.states(cfg, this.scopesFor(cfg, payer));
    if (states.length === 0) return undefined;
    // Projected only when some limit applies: with no budgets a turn pays nothing for the check.
    const projected = typeof projection === "function" ? projection() : projection;
    for (const st of states) {
      const next = st.spent + (st.unit === "usd" ? projected.usd : projected.tokens);
      if (st.spent < st.limit && next <= st.limit) continue;
      const notice = blockNotice(st, cfg.timezone);
      if (this.markOnce(`budgets.blocked:${st.id}:${st.periodStart}`)) {
        this.opts.log?.({ limit: st.id, spent: st.spent, cap: st.limit }, `budget reached: ${notice}`);
        this.send(cfg, `Budget reached. ${notice}`);
      }
      return { limit: st, notice };
    }
    return undefined;
  }

  /** After a call was recorded: warns once per limit and period when `warn_at` is crossed. */
  recorded(payer: Payer): void {
    const cfg = this.opts.config();
    for (const st of this.states(cfg, this.scopesFor(cfg, payer))) {
      if (st.fraction < cfg.budgets.warn_at) continue;
      if (!this.markOnce(`budgets.warned:${st.id}:${st.periodStart}`)) continue;
      const text =
        `Budget warning: ${Math.floor(st.fraction * 100)}% of the ${st.period} limit for ${st.label} is used ` +
        `(${formatAmount(st.spent, st.unit)} of ${formatAmount(st.limit, st.unit)}); ` +
        `it resets ${formatReset(st.resetsAt, cfg.timezone)}.`;
      this.opts.log?.({ limit: st.id, spent: st.spent, cap: st.limit }, text);
      this.send(cfg, text);
    }
  }

  /**
   * Every configured limit now: overall, each configured agent and channel, and the per-session
   * limit for the sessions that spent this month (most first, up to `maxSessions`).
   */
  status(maxSessions = 10): LimitState[] {
    const cfg = this.opts.config();
    const b = cfg.budgets;
    const scopes: { scope: Scope; limits: Limits }[] = [{ scope: { kind: "overall" }, limits: b.overall }];
    for (const [id, limits] of Object.entries(b.agents))
      scopes.push({ scope: { kind: "agent", id }, limits });
    for (const [id, limits] of Object.entries(b.channels))
      scopes.push({ scope: { kind: "channel", id }, limits });
    if (KINDS.some((k) => b.per_session[k.key] !== undefined)) {
      const since = periodBounds("monthly", this.opts.now(), cfg.timezone).start;
      for (const key of this.topSessions(since, maxSessions))
        scopes.push({ scope: { kind: "session", id: key }, limits: b.per_session });
    }
    return this.states(
      cfg,
      scopes.filter((s) => KINDS.some((k) => s.limits[k.key] !== undefined)),
    );
  }

  private topSessions(since: number, n: number): string[] {
    const hasCol = this.opts.db
      .prepare<[], { name: string }>(
        "SELECT name FROM pragma_table_info('usage') WHERE name = 'payer_session'",
      )
      .get();
    if (!hasCol) return [];
    return this.opts.db
      .prepare<[number, number], { k: string }>(
        `SELECT payer_session AS k FROM usage WHERE created_at >= ? AND payer_session IS NOT NULL
         GROUP BY payer_session ORDER BY SUM(total) DESC LIMIT ?`,
      )
      .all(since, n)
      .map((r) => r.k);
  }

  /** True the first time `key` is marked (kv row inserted), false after. Read-only stores say false. */
  private markOnce(key: string): boolean {
    try {
      this.markStmt ??= this.opts.db.prepare(
        "INSERT OR IGNORE INTO kv (key, value, updated_at) VALUES (?, '1', ?)",
      ) as unknown as { run: (...a: unknown[]) => { changes: number } };
      return this.markStmt.run(key, this.opts.now()).changes === 1;
    } catch {
      return false;
    }
  }

  private send(cfg: Config, text: string): void {
    const target = cfg.budgets.warn_target;
    if (target === "none" || !this.opts.warn) return;
    this.opts.warn(target, text).catch((err: unknown) => {
      this.opts.log?.({ target, err: (err as Error).message }, "could not deliver a budget message");
    });
  }
}

/** The chat notice of a refused call. */
export function blockNotice(st: LimitState, timeZone: string): string {
  const when = st.period === "daily" ? "today" : "this month";
  return (
    `The ${st.period} budget for ${st.label} is ${formatAmount(st.limit, st.unit)} and ` +
    `${formatAmount(st.spent, st.unit)} has been spent ${when}, so I did not call the model. ` +
    `It resets ${formatReset(st.resetsAt, timeZone)}; to go on sooner, raise the limit under budgets in config.yaml.`
  );
}
