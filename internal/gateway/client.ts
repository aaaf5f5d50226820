/**
 * A small websocket client for the gateway protocol (docs/gateway-protocol.md), used by
 * `familiar chat`, `familiar status` and tests: connect handshake, request/response by id, events.
 */
import WebSocket from "ws";
import { PROTOCOL_VERSION, type EventFrame, type ResFrame } from "./protocol.js";

/**
 * Client-side errors. `GATEWAY_UNREACHABLE`: nothing answered at the URL; `GATEWAY_REFUSED`: the
 * gateway answered and said no (bad token, rate limit, protocol); `GATEWAY_CLOSED`: the socket closed
 * while a request was pending; otherwise the server's own error code (`invalid_params`, ...).
 */
export class GatewayClientError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "GatewayClientError";
  }
}

export interface GatewayClientOptions {
  /** ws://host:port/ws */
  url: string;
  token?: string | undefined;
  clientName: string;
  clientVersion?: string;
  /** `owner` (the owner's CLI: may settle any approval) or `chat` (default: only its own). */
  role?: "owner" | "chat";
  timeoutMs?: number;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export class GatewayClient {
  private pending = new Map<number, Pending>();
  private nextId = 1;
  private listeners = new Map<string, Set<(payload: unknown, seq: number) => void>>();
  private closeListeners = new Set<(code: number, reason: string) => void>();
  hello: Record<string, unknown> = {};

  private constructor(private ws: WebSocket) {
    ws.on("message", (data) => this.onFrame(String(data)));
    ws.on("close", (code, reason) => {
      const why = reason.toString() || `code ${code}`;
      for (const p of this.pending.values())
        p.reject(new GatewayClientError("GATEWAY_CLOSED", `connection closed: ${why}`));
      this.pending.clear();
      for (const fn of this.closeListeners) fn(code, reason.toString());
    });
    ws.on("error", () => undefined);
  }

  /** Opens the socket and performs the `connect` handshake. */
  static connect(opts: GatewayClientOptions): Promise<GatewayClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(opts.url, { handshakeTimeout: opts.timeoutMs ?? 10_000 });
      let settled = false;
      const fail = (err: GatewayClientError): void => {
        if (settled) return;
        settled = true;
        ws.terminate();
        reject(err);
      };
      ws.once("unexpected-response", (_req, res) => {
        fail(
          new GatewayClientError(
            "GATEWAY_REFUSED",
            `gateway refused the websocket: HTTP ${res.statusCode} ${res.statusMessage ?? ""}`.trim(),
          ),
        );
      });
      ws.once("error", (err: Error & { code?: string }) =>
        fail(
          new GatewayClientError(
            "GATEWAY_UNREACHABLE",
            `cannot reach the gateway at ${opts.url}: ${err.code ?? err.message} (is the daemon running? ` +
              "a daemon started with another config is found with --config PATH or FAMILIAR_CONFIG)",
          ),
        ),
      );
      ws.once("close", (code, reason) =>
        fail(
          new GatewayClientError(
            "GATEWAY_REFUSED",
            `gateway closed the connection (${code}): ${reason.toString() || "no reason"}`,
          ),
        ),
      );
      ws.once("open", () => {
        ws.once("message", (data) => {
          let f: ResFrame;
          try {
            f = JSON.parse(String(data)) as ResFrame;
          } catch {
            return fail(
              new GatewayClientError("GATEWAY_REFUSED", "gateway sent a malformed connect response"),
            );
          }
          if (f.type !== "res" || !f.ok)
            return fail(
              new GatewayClientError(
                "GATEWAY_REFUSED",
                f.type === "res" && !f.ok ? f.error.message : "unexpected connect response",
              ),
            );
          settled = true;
          ws.removeAllListeners("close");
          ws.removeAllListeners("error");
          const c = new GatewayClient(ws);
          c.hello = (f.payload ?? {}) as Record<string, unknown>;
          resolve(c);
        });
        ws.send(
          JSON.stringify({
            type: "req",
            id: 0,
            method: "connect",
            params: {
              ...(opts.token ? { token: opts.token } : {}),
              client: { name: opts.clientName, version: opts.clientVersion ?? "1" },
              protocol: PROTOCOL_VERSION,
              ...(opts.role ? { role: opts.role } : {}),
            },
          }),
        );
      });
    });
  }

  private onFrame(text: string): void {
    let f: ResFrame | EventFrame;
    try {
      f = JSON.parse(text) as ResFrame | EventFrame;
    } catch {
      return;
    }
    if (f.type === "res") {
      const p = typeof f.id === "number" ? this.pending.get(f.id) : undefined;
      if (!p || typeof f.id !== "number") return;
      this.pending.delete(f.id);
      if (f.ok) p.resolve(f.payload);
      else p.reject(new GatewayClientError(f.error.code, f.error.message));
    } else if (f.type === "event") {
      for (const fn of this.listeners.get(f.event) ?? []) fn(f.payload, f.seq);
      for (const fn of this.listeners.get("*") ?? []) fn({ event: f.event, payload: f.payload }, f.seq);
    }
  }

  /** Sends a request and resolves with its payload (rejects with GatewayClientError on `ok:false`). */
  request<T = Record<string, unknown>>(method: string, params?: Record<string, unknown>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.OPEN)
        return reject(new GatewayClientError("GATEWAY_CLOSED", "connection is closed"));
      const id = this.nextId++;
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ type: "req", id, method, ...(params ? { params } : {}) }));
    });
  }

  /** Subscribes to an event (`*` for all); returns the unsubscribe function. */
  on(event: string, fn: (payload: unknown, seq: number) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  onClose(fn: (code: number, reason: string) => void): () => void {
    this.closeListeners.add(fn);
    return () => this.closeListeners.delete(fn);
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.ws.readyState === WebSocket.CLOSED) return resolve();
      this.ws.once("close", () => resolve());
      this.ws.close(1000, "bye");
    });
  }
}

/** The websocket URL for a gateway bind/port (wildcard binds are reached over loopback). */
export function gatewayUrl(bind: string, port: number): string {
  const host =
    bind === "0.0.0.0" || bind === ""
      ? "127.0.0.1"
      : bind === "::"
        ? "[::1]"
        : bind.includes(":")
          ? `[${bind}]`
          : bind;
  return `ws://${host}:${port}/ws`;
}
