/**
 * Maps agent events to the gateway's `chat` event payloads (one shape for websocket clients, the web
 * chat and `familiar chat`). Keeps per-run state only between a run's start and its end.
 */
import type { AgentEvent } from "../core/agent-events.js";
import type { Usage } from "../models/types.js";
import { publicTurnMessage } from "./turn-error-public.js";

export type ChatEventPayload =
  | { state: "started"; runId: string; sessionKey: string; agentId: string }
  | { state: "delta"; runId: string; sessionKey: string; delta: string }
  | {
      state: "tool";
      runId: string;
      sessionKey: string;
      phase: "start" | "end";
      callId: string;
      name: string;
      args?: unknown;
      isError?: boolean;
      durationMs?: number;
      preview?: string;
    }
  | { state: "notice"; runId: string; sessionKey: string; kind: string; text: string }
  | {
      state: "final";
      runId: string;
      sessionKey: string;
      text: string;
      finishReason: string;
      usage: Usage;
      model?: string;
    }
  | { state: "aborted"; runId: string; sessionKey: string; text: string }
  | { state: "error"; runId: string; sessionKey: string; code: string; message: string; text: string };

const PREVIEW = 300;

/** Stateful translator; `map` returns undefined for events clients do not need. */
export class ChatEventMapper {
  private errors = new Map<string, { code: string; message: string }>();

  map(sessionKey: string, agentId: string, e: AgentEvent): ChatEventPayload | undefined {
    switch (e.type) {
      case "turn_start":
        return { state: "started", runId: e.runId, sessionKey, agentId };
      case "text_delta":
        return { state: "delta", runId: e.runId, sessionKey, delta: e.delta };
      case "tool_start":
        return {
          state: "tool",
          runId: e.runId,
          sessionKey,
          phase: "start",
          callId: e.callId,
          name: e.name,
          args: e.args,
        };
      case "tool_end":
        return {
          state: "tool",
          runId: e.runId,
          sessionKey,
          phase: "end",
          callId: e.callId,
          name: e.name,
          isError: e.isError,
          durationMs: e.durationMs,
          preview: e.result.length > PREVIEW ? `${e.result.slice(0, PREVIEW)}…` : e.result,
        };
      case "notice":
        return { state: "notice", runId: e.runId, sessionKey, kind: e.kind, text: e.text };
      case "error":
        // Held until turn_end so a client sees exactly one terminal event per run.
        this.errors.set(e.runId, { code: e.code, message: e.message });
        return undefined;
      case "turn_end": {
        const err = this.errors.get(e.runId);
        this.errors.delete(e.runId);
        if (e.finishReason === "aborted")
          return { state: "aborted", runId: e.runId, sessionKey, text: e.text };
        if (e.finishReason === "error")
          return {
            state: "error",
            runId: e.runId,
            sessionKey,
            code: err?.code ?? "turn_failed",
            // Without the provider's address: websocket clients are API clients (issue 46 item 6).
            message: publicTurnMessage(err?.message ?? (e.text || "the turn failed")),
            text: publicTurnMessage(e.text),
          };
        return {
          state: "final",
          runId: e.runId,
          sessionKey,
          text: e.text,
          finishReason: e.finishReason,
          usage: e.usage,
          ...(e.model ? { model: e.model } : {}),
        };
      }
      default:
        return undefined;
    }
  }
}
