/**
 * Thin wrappers over the one loop, mirroring the reference package's Chat / ChatStream / ChatLight /
 * ChatWithImages. They only shape the InboundMessage and adapt events to callbacks.
 */
import type { AgentEvent } from "../core/agent-events.js";
import type { AgentHost, ImageInput, InboundMessage, TurnHandle, TurnResult } from "../core/host.js";

/** Real-time visibility into a turn (reference: StreamCallbacks). */
export interface StreamCallbacks {
  onChunk?(text: string): void;
  onThinking?(text: string): void;
  onToolStart?(name: string, args: unknown): void;
  onToolDone?(name: string, result: string, isError: boolean): void;
  onIterationText?(text: string): void;
  onNotice?(text: string): void;
}

type Base = Omit<InboundMessage, "text" | "images" | "lightContext">;

/** Processes one message and resolves with the answer. */
export function chat(host: AgentHost, base: Base, text: string): Promise<TurnResult> {
  return host.submit({ ...base, text }).result;
}

/** Like `chat` but with callbacks for deltas, thinking, tools and intermediate text. */
export function chatStream(host: AgentHost, base: Base, text: string, cb: StreamCallbacks): TurnHandle {
  return host.submit({ ...base, text }, (e: AgentEvent) => {
    switch (e.type) {
      case "text_delta":
        return cb.onChunk?.(e.delta);
      case "thinking_delta":
        return cb.onThinking?.(e.delta);
      case "tool_start":
        return cb.onToolStart?.(e.name, e.args);
      case "tool_end":
        return cb.onToolDone?.(e.name, e.result, e.isError);
      case "iteration_text":
        return cb.onIterationText?.(e.text);
      case "notice":
        return cb.onNotice?.(e.text);
    }
  });
}

/** Minimal prompt (identity + HEARTBEAT.md) for heartbeat and cron. */
export function chatLight(host: AgentHost, base: Base, text: string): Promise<TurnResult> {
  return host.submit({ ...base, text, lightContext: true }).result;
}

/** A message with images for vision models (base64 parts). */
export function chatWithImages(
  host: AgentHost,
  base: Base,
  text: string,
  images: ImageInput[],
): Promise<TurnResult> {
  return host.submit({ ...base, text, images }).result;
}
