/**
 * A server-sent-events writer for `/api` streams. Each event is `event: <name>` plus one JSON `data:`
 * line and a sequential `id:`.
 *
 * Invariant: writing never throws and never blocks the turn: once the client has gone, events are
 * dropped (the turn itself goes on and stores its answer).
 */
import type { ServerResponse } from "node:http";

export class SseWriter {
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
    if (!this.connected) return;
    this.seq++;
    this.res.write(`id: ${this.seq}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    if (this.connected) this.res.end();
  }
}
