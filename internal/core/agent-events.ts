/**
 * Typed events of one agent turn. Channels, the gateway and the API only ever consume these;
 * they never reach into the loop. Every event carries the `runId` of its turn.
 */
import type { Usage } from "./usage.js";

/** Why a turn ended. */
export type FinishReason =
  | "stop"
  | "max_iterations"
  | "aborted"
  | "error"
  | "loop_breaker"
  | "length"
  /** The model called a client's function (`/v1` client tools): the client runs it and continues. */
  | "tool_calls";

export type AgentEvent =
  | {
      type: "turn_start";
      runId: string;
      sessionKey: string;
      sessionId: string;
      agentId: string;
      requestId: string;
    }
  | { type: "text_delta"; runId: string; delta: string }
  | { type: "thinking_delta"; runId: string; delta: string }
  /** Text the model produced alongside tool calls in one iteration (after it, text restarts). */
  | { type: "iteration_text"; runId: string; text: string }
  | { type: "tool_start"; runId: string; callId: string; name: string; args: unknown }
  | {
      type: "tool_end";
      runId: string;
      callId: string;
      name: string;
      result: string;
      isError: boolean;
      durationMs: number;
    }
  | { type: "usage"; runId: string; usage: Usage; provider: string; model: string }
  /** A short user-visible notice (compaction happened, loop warning, fallback model used). */
  | { type: "notice"; runId: string; kind: string; text: string }
  | {
      type: "turn_end";
      runId: string;
      /** The complete final answer text (what channels must deliver exactly once). */
      text: string;
      finishReason: FinishReason;
      usage: Usage;
      model?: string;
      /** Store id of the final assistant message. */
      messageId?: number;
    }
  | { type: "error"; runId: string; code: string; message: string };

export type AgentEventType = AgentEvent["type"];

/**
 * The notice a turn emits when it starts waiting for the owner's answer (an approval question):
 * chats stop showing "typing…" until {@link APPROVAL_ANSWERED_NOTICE}, which follows it once the
 * question settled (answered, expired or withdrawn), always within the turn.
 */
export const APPROVAL_WAIT_NOTICE = "approval_wait";
/** The notice that ends an {@link APPROVAL_WAIT_NOTICE}: the turn goes on. */
export const APPROVAL_ANSWERED_NOTICE = "approval_answered";
