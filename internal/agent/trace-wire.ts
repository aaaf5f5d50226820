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
  /** Model calls only; null when `models.pricing` has no price for the model. */
  cost?: number | null;
  /**
   * `taint` and `approval` records (prompt-injection containment): the sources of the session's
   * taint, or the sink, its target and the decision.
   */
  detail?: Record<string, unknown>;
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
    /** USD over priced calls. */
    cost: number;
    unpriced_calls: number;
    sub_calls: number;
    model_calls: number;
    tool_calls: number;
    requests: number;
    max_depth: number;
  };
}
