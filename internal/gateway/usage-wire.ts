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
  totals: { cost: number[]; tokens: number[]; calls: number[] };
  byAgent: UsageSeries[];
  byModel: UsageSeries[];
  byChannel: UsageSeries[];
  today: { cost: number; tokens: number; input: number; output: number; calls: number };
}

/** One of the most expensive sessions, with the request that cost the most (for its call tree). */
export interface SessionCost {
  sessionId: string;
  sessionKey: string | null;
  agentId: string | null;
  cost: number;
  tokens: number;
  calls: number;
  /** Calls of a model without a price in `models.pricing` (their cost is not in `cost`). */
  unpricedCalls: number;
  lastAt: number;
  topRequestId: string | null;
}
