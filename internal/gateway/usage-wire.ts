/**
 * The shapes of the usage reports on the wire (`usage.daily`, `usage.sessions`): imported by the
 * server (usage-report.ts) and, type-only, by the console, so the two cannot drift apart. No imports.
 */

/** One series of a split: a key (agent id, model, channel) and a value per day. */
export interface UsageSeries {
  key: string;
  cost: number[];
  tokens: number[];
}

/** The daily report: day labels (YYYY-MM-DD, oldest first) and one split per dimension. */
export interface DailyUsage {
  since: number;
  timezone: string;
  days: string[];
  /** `estimatedCalls`: calls of a model without a price, counted in `cost` at `defaultPrice`. */
  totals: { cost: number[]; tokens: number[]; calls: number[]; estimatedCalls: number[] };
  byAgent: UsageSeries[];
  byModel: UsageSeries[];
  byChannel: UsageSeries[];
  today: {
    cost: number;
    tokens: number;
    input: number;
    output: number;
    calls: number;
    estimatedCalls: number;
  };
  /** `budgets.default_price` (USD per 1M tokens): what a call of a model without a price counts at. */
  defaultPrice: { input: number; output: number };
}

/** One of the most expensive sessions, with the request that cost the most (for its call tree). */
export interface SessionCost {
  sessionId: string;
  sessionKey: string | null;
  agentId: string | null;
  cost: number;
  tokens: number;
  calls: number;
  /** Calls of a model without a price, counted in `cost` at the default price (an estimate). */
  estimatedCalls: number;
  lastAt: number;
  topRequestId: string | null;
}
