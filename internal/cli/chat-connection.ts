/**
 * The gateway connection of `familiar chat`, kept alive across daemon restarts: when the socket
 * closes it reconnects with exponential backoff, tells the user once that it is reconnecting and once
 * that it is back, and re-attaches the event listeners to each new socket.
 */
import { GatewayClient, GatewayClientError } from "../gateway/client.js";

export interface ReconnectingOptions {
  /** Opens one connection (handshake included). */
  connect: () => Promise<GatewayClient>;
  /** One status line for the user (stderr). */
  notify: (line: string) => void;
  /** The gateway refused the token on a reconnect: retrying will not help. */
  onGiveUp: (message: string) => void;
  /** Called after each successful reconnect, before queued requests go out. */
  onReconnected?: () => void;
  /** First retry delay; doubles up to `maxDelayMs`. Defaults 250 ms and 5 s. */
  initialDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * A GatewayClient that comes back. Invariant: `client` is the open socket while `connected` is true;
 * while reconnecting, `ready()` waits and `request` waits for the next socket before sending.
 */
export class ReconnectingGateway {
  private client: GatewayClient;
  private listeners = new Map<string, (payload: unknown) => void>();
  private readyWaiters: (() => void)[] = [];
  private reconnecting = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    first: GatewayClient,
    private opts: ReconnectingOptions,
  ) {
    this.client = first;
    this.attach(first);
  }

  /** The handshake answer of the first connection (default agent, ...). */
  get hello(): Record<string, unknown> {
    return this.client.hello;
  }

  get connected(): boolean {
    return !this.reconnecting && !this.closed && this.client.open;
  }

  /** Listens to an event on this and every later socket. One listener per event. */
  on(event: string, fn: (payload: unknown) => void): void {
    this.listeners.set(event, fn);
    this.client.on(event, fn);
  }

  /** Resolves once a socket is open (at once when it is). */
  ready(): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /**
   * Sends a request once a socket is open. Rejects with `GATEWAY_CLOSED` when the socket drops before
   * the answer; the caller decides whether a retry is safe (chat.send is, with its idempotency key).
   */
  async request<T>(method: string, params: Record<string, unknown>): Promise<T> {
    await this.ready();
    return this.client.request<T>(method, params);
  }

  /** Stops reconnecting and closes the socket. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.client.close();
  }

  private attach(c: GatewayClient): void {
    for (const [event, fn] of this.listeners) c.on(event, fn);
    c.onClose((_code, reason) => {
      if (this.closed || c !== this.client) return;
      this.reconnecting = true;
      this.opts.notify(`familiar chat: connection lost${reason ? ` (${reason})` : ""}; reconnecting…`);
      this.retry(this.opts.initialDelayMs ?? 250);
    });
  }

  private retry(delayMs: number): void {
    this.timer = setTimeout(() => {
      void this.opts.connect().then(
        (c) => {
          if (this.closed) {
            void c.close();
            return;
          }
          this.client = c;
          this.attach(c);
          this.reconnecting = false;
          this.opts.notify("familiar chat: reconnected");
          this.opts.onReconnected?.();
          const waiters = this.readyWaiters;
          this.readyWaiters = [];
          for (const w of waiters) w();
        },
        (err: GatewayClientError) => {
          if (this.closed) return;
          // A refused token will not get better by retrying; anything else (daemon still starting,
          // port not yet bound) does.
          if (err.code === "GATEWAY_REFUSED" && /token/i.test(err.message)) {
            this.closed = true;
            return this.opts.onGiveUp(err.message);
          }
          this.retry(Math.min(delayMs * 2, this.opts.maxDelayMs ?? 5000));
        },
      );
    }, delayMs);
  }
}
