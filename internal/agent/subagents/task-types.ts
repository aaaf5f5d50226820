/**
 * The shapes of the subagent task manager (task-manager.ts): the persisted task row and the
 * request and outcome of one delegated run.
 */
import type { TurnResult } from "../../core/host.js";

/** Where a task stands; `interrupted` = a restart or shutdown caught it queued or running. */
export type TaskStatus = "queued" | "running" | "done" | "failed" | "cancelled" | "interrupted";

/** One row of `subagent_tasks` (snake_case: the columns as SQLite returns them). */
export interface TaskRow {
  id: string;
  agent_id: string;
  message: string;
  model: string | null;
  status: TaskStatus;
  depth: number;
  origin_session_key: string;
  origin_agent_id: string | null;
  origin_channel: string | null;
  reply_target: string | null;
  parent_request_id: string | null;
  result: string | null;
  error: string | null;
  announce_status: string | null;
  announce_error: string | null;
  /** Announcements that led to this task: 0 when a normal turn started it. */
  chain: number;
  /**
   * JSON array of the session keys a background dispatch's tasks ran in, added as each starts
   * (null for a delegation: its one session follows from its id, see `taskSessionKey`).
   */
  sessions: string | null;
  /** 1 when a shared chat (a group, a non-owner) started it: its turns and announcement withhold private files. */
  withhold_private: number;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
}

/** A request to run delegated work (sync or async) on behalf of an originating session. */
export interface RunRequest {
  agentId: string;
  message: string;
  model?: string;
  /** Depth of the new (child) turn. */
  depth: number;
  parentRequestId: string;
  originSessionKey: string;
  originAgentId?: string;
  originChannel?: string;
  replyTarget?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Started by a turn that withholds the owner's private files (a shared chat): the child turns and
   * the announcement withhold them too, so a subagent cannot fetch what its caller may not see.
   */
  withholdPrivate?: boolean;
}

/** How a synchronous delegated run ended. */
export interface RunOutcome {
  ok: boolean;
  text: string;
  error?: string;
  /** Why the child turn stopped early: its timeout, the caller's signal, or the host (shutdown). */
  stopped?: "timeout" | "caller" | "host";
  result?: TurnResult;
}
