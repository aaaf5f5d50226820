/**
 * The rows and inputs of the session tables (session-store.ts holds the queries). Kept apart so the
 * store stays one file of SQL; every type is re-exported from session-store.ts.
 */
import type { ToolCall, Usage } from "../models/types.js";

export type StoredRole = "user" | "assistant" | "tool" | "system" | "event";
export type MessageStatus = "ok" | "aborted" | "error" | "summary" | "pending";

export interface SessionRow {
  id: string;
  key: string;
  agent_id: string;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
  parent_id: string | null;
  successor_id: string | null;
  reset_reason: string | null;
  model_override: string | null;
  compact_strategy: string | null;
  compact_keep_last_n: number | null;
  compact_observation_mask: number | null;
  compact_summary_model: string | null;
  origin: string | null;
  meta: string | null;
  /**
   * What the newest message is, written with it in the same transaction ({@link TailKind}); NULL
   * when unknown (sessions from before core:2, compaction successors, imports).
   */
  tail_kind: TailKind | null;
}

/**
 * The kind of a session's newest message as `appendRows` records it: `tool` (a tool result), `calls`
 * (any message carrying tool calls, whatever its status, since a status can change later) or
 * `plain`. Invariant: `plain` is written only with a row that has no calls and is not a tool result,
 * so a `plain` session has no pending tool calls (openai-pending-calls.ts relies on it).
 */
export type TailKind = "tool" | "calls" | "plain";

/** The kind of a session's newest message ({@link SessionStore.newest}). */
export interface NewestMessage {
  role: string;
  /** 1 when it carries tool calls (a non-empty `tool_calls`), else 0. */
  has_calls: number;
  status: string;
}

export interface StoredMessage {
  id: number;
  session_id: string;
  role: StoredRole;
  content: string;
  parts: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  tool_name: string | null;
  model: string | null;
  finish_reason: string | null;
  status: MessageStatus;
  usage: string | null;
  request_id: string | null;
  created_at: number;
}

export interface NewMessage {
  role: StoredRole;
  content: string;
  parts?: unknown;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  toolName?: string;
  model?: string;
  finishReason?: string;
  status?: MessageStatus;
  usage?: Usage;
  requestId?: string;
}

export interface SessionCreateOptions {
  compactStrategy?: string;
  compactKeepLastN?: number;
  compactObservationMask?: boolean;
  compactSummaryModel?: string;
  origin?: string;
  meta?: Record<string, unknown>;
}
