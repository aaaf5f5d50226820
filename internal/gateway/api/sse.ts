/**
 * A server-sent-events writer for `/api` streams. Each event is `event: <name>` plus one JSON `data:`
 * line and a sequential `id:` (its own count, or the ids of a recorded `TurnStream`).
 *
 * Invariant: writing never throws and never blocks the turn: once the client has gone, events are
 * dropped (the turn itself goes on and stores its answer).
 */
import type { ServerResponse } from "node:http";
import type { AgentEvent } from "../../core/agent-events.js";

/** Where a stream's events go: an `SseWriter` or a `TurnStream`. */
export interface EventSink {
  send(event: string, data: unknown): void;
}

export class SseWriter implements EventSink {
  private seq = 0;
  private closed = false;

  constructor(private res: ServerResponse) {
    res.once("close", () => {
      this.closed = true;
    });
  }

  /** Sends the 200 and the stream headers. */
  open(headers: Record<string, string> = {}): void {
    this.res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
      ...headers,
    });
    this.res.flushHeaders();
  }

  /** True while the client is still connected. */
  get connected(): boolean {
    return !this.closed && !this.res.destroyed && !this.res.writableEnded;
  }

  send(event: string, data: unknown): void {
    this.frame(this.seq + 1, event, JSON.stringify(data));
  }

  /** Writes one event with a given id and already-encoded JSON data. */
  frame(id: number, event: string, data: string): void {
    if (!this.connected) return;
    this.seq = id;
    this.res.write(`id: ${id}\nevent: ${event}\ndata: ${data}\n\n`);
  }

  /** Runs `fn` once the client has gone or the stream has ended. */
  onClose(fn: () => void): void {
    this.res.once("close", fn);
  }

  end(): void {
    if (this.connected) this.res.end();
  }
}

/**
 * Maps a turn's agent events to the `/api` stream events (docs/api.md): `thought`, `token`,
 * `token-reset` (once per tool iteration, before its first `tool-call`), `tool-call`, `tool-result`
 * and `notice`. Terminal events are the route's own.
 */
export function turnEventForwarder(sse: EventSink): (e: AgentEvent) => void {
  let inTools = false;
  return (e) => {
    switch (e.type) {
      case "thinking_delta":
        inTools = false;
        if (e.delta) sse.send("thought", { delta: e.delta });
        return;
      case "text_delta":
        inTools = false;
        if (e.delta) sse.send("token", { delta: e.delta });
        return;
      case "tool_start":
        if (!inTools) sse.send("token-reset", {});
        inTools = true;
        sse.send("tool-call", { toolName: e.name, args: e.args, callId: e.callId });
        return;
      case "tool_end":
        sse.send("tool-result", { toolName: e.name, callId: e.callId, result: e.result, isError: e.isError });
        return;
      case "notice":
        sse.send("notice", { kind: e.kind, text: e.text });
        return;
      default:
        return;
    }
  };
}
