/**
 * The shape of a call-tree report on the wire (`GET /api/traces/{id}`, `familiar trace`): imported by
 * the server (trace-report.ts) and, type-only, by the console, so the two cannot drift apart.
 */
import type { Usage } from "../core/usage.js";

export interface TraceCall {
  id: number;
  kind: string;
  name: string;
  request_id: string;
  parent_request_id: string | null;
  depth: number;
  agent_id: string | null;
  session_id: string | null;
  status: string;
  started_at: number;
  ended_at: number | null;
  /** Model calls only. */
  usage?: Usage;
  /**
   * Model calls only: USD at the model's price, or at `budgets.default_price` when `models.pricing`
   * has none (then `estimated` is true). Null only in reports written before that rule.
   */
  cost?: number | null;
  /**
   * Model calls recorded since the breakdown was added: the prompt's characters per part (system
   * prompt, tool schemas, earlier history, tool results, the new message), to be scaled to
   * `usage.input` as an estimate.
   */
  prompt?: { system: number; tools: number; history: number; tool_results: number; new_message: number };
  /** Model calls: retries after a context overflow (each after a compaction). */
  overflow_retries?: number;
  /** Model calls: the history was compacted just before this call. */
  compacted?: boolean;
  /**
   * `taint`: the sources of the session's taint. `approval` (from the question to the answer): an
   * exec or write's `{kind, summary, decision, reason?, via?}`, or a containment sink's `{sink,
   * target, action, decision, reason?}`; decision is approved, denied, expired (or granted/refused
   * without asking). `retry`: `{model, code, message, attempt, next: retry|fallback, wait_ms,
   * fallback?}`. `compaction`: `{trigger: threshold|overflow, messages_before, messages_after}`.
   */
  detail?: Record<string, unknown>;
  /** Model calls only: true when `cost` is an estimate at the default price. */
  estimated?: boolean;
}

/** One turn (request) of the tree with the usage of its own model calls. */
export interface TraceRequest {
  request_id: string;
  parent_request_id: string | null;
  depth: number;
  agent_id: string | null;
  session_id: string | null;
  status: string;
  model_calls: number;
  tool_calls: number;
  usage: Usage;
  cost: number;
}

export interface TraceReport {
  /** The id that was asked for (any request of the tree). */
  request_id: string;
  root_request_id: string;
  calls: TraceCall[];
  requests: TraceRequest[];
  totals: {
    usage: Usage;
    /** USD over every call; calls without a price count at `default_price` (an estimate). */
    cost: number;
    /** Model calls without a price, counted in `cost` at `default_price`. */
    unpriced_calls: number;
    /** `budgets.default_price`, USD per 1M tokens. */
    default_price: { input: number; output: number };
    sub_calls: number;
    model_calls: number;
    tool_calls: number;
    requests: number;
    max_depth: number;
  };
}
