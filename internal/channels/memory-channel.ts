/**
 * An in-memory channel: records everything sent to it. Used by tests (heartbeat/cron delivery, the
 * channel contract suite) and as the reference implementation of the Channel interface.
 */
import { ChannelError, type Channel, type ChannelStatus, type SendOptions } from "./channel.js";

export interface SentMessage {
  target: string;
  text: string;
  opts?: SendOptions;
  at: number;
}

export class MemoryChannel implements Channel {
  readonly sent: SentMessage[] = [];
  private state: ChannelStatus = { state: "stopped", since: Date.now() };
  private waiters: { n: number; resolve: () => void }[] = [];
  /** When set, `send` rejects with this error (fault injection). */
  failWith: Error | undefined;

  constructor(readonly id = "test") {}

  async start(): Promise<void> {
    this.state = { state: "connected", since: Date.now() };
  }
  async stop(): Promise<void> {
    this.state = { state: "stopped", since: Date.now() };
  }
  status(): ChannelStatus {
    return this.state;
  }
  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    if (this.state.state !== "connected")
      throw new ChannelError("CHANNEL_NOT_RUNNING", `channel ${this.id} is not running`);
    if (this.failWith) throw this.failWith;
    this.sent.push({ target, text, ...(opts ? { opts } : {}), at: Date.now() });
    for (const w of [...this.waiters]) {
      if (this.sent.length >= w.n) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }
  /** Resolves once at least `n` messages were sent. */
  waitFor(n: number): Promise<void> {
    if (this.sent.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }
}
