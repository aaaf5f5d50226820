/**
 * The reconcile report as it goes over the wire: built by reconcile.ts, read (type-only) by the
 * console's usage page, so the two cannot drift apart. No imports.
 */

/** A ledger call named as part of an explanation. */
export interface LedgerCall {
  id: number;
  at: number;
  provider: string;
  model: string;
  kind: string | null;
  requestId: string | null;
  sessionKey: string | null;
  jobId: string | null;
  callId: string | null;
  cost: number;
  source: string | null;
  input: number;
  output: number;
}

/** One day and model. */
export interface ReconcileRow {
  day: string;
  model: string;
  /** The provider's figure (USD), or null for an export of counts only. */
  provider: number | null;
  familiar: number;
  difference: number;
  /** Tokens (input + output) on each side, for an export of counts. */
  providerTokens: number | null;
  familiarTokens: number;
  calls: number;
  /** True when the two agree (within half a percent, or a ten-thousandth of a dollar). */
  matches: boolean;
  /** Plain sentences: why they differ. */
  explain: string[];
  /** The calls named by the explanation. */
  suspects: LedgerCall[];
}

/** The whole comparison. */
export interface ReconcileReport {
  kind: "openai-costs" | "openai-activity" | "openrouter-activity";
  providers: string[];
  rows: ReconcileRow[];
  total: { provider: number | null; familiar: number; difference: number };
}
