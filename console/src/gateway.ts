/**
 * The console's connection to the daemon: one websocket speaking the gateway protocol
 * (docs/gateway-protocol.md) for methods and live events, and `fetch` with the bearer token for /api.
 * Reconnects by itself with backoff (250 ms doubling to 5 s); a refused token stops and asks to log in.
 */
import { getToken } from "./auth";

type Listener = (payload: unknown) => void;
export type ConnState = "connecting" | "open" | "closed" | "unauthorized";

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

/** An error answered by the gateway, with its protocol code. */
export class GatewayError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "GatewayError";
  }
}

class Gateway {
  private ws: WebSocket | undefined;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private queue: (() => void)[] = [];
  private listeners = new Map<string, Set<Listener>>();
  private backoff = 250;
  private timer: number | undefined;
  state: ConnState = "closed";
  lastError = "";
  hello: Record<string, unknown> = {};

  connect(): void {
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) return;
    clearTimeout(this.timer);
    this.setState("connecting");
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
    this.ws = ws;
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "req",
          id: 0,
          method: "connect",
          // The owner's role: the console settles any approval (a chat-role client only its own).
          params: {
            token: getToken(),
            client: { name: "console", version: "1" },
            protocol: 1,
            role: "owner",
          },
        }),
      );
    };
    ws.onmessage = (m) => this.onFrame(String(m.data));
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      for (const p of this.pending.values()) p.reject(new GatewayError("unavailable", "connection lost"));
      this.pending.clear();
      if (e.code === 1008 && /token|unauthori/i.test(e.reason)) {
        this.lastError = e.reason;
        this.setState("unauthorized");
        return;
      }
      this.setState("closed");
      this.timer = window.setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, 5000);
    };
  }

  /** Closes and reconnects (after a new token). */
  reconnect(): void {
    const ws = this.ws;
    this.ws = undefined;
    ws?.close();
    this.backoff = 250;
    this.connect();
  }

  private onFrame(text: string): void {
    let f: {
      type?: string;
      id?: number;
      ok?: boolean;
      payload?: unknown;
      error?: { code: string; message: string };
      event?: string;
    };
    try {
      f = JSON.parse(text) as typeof f;
    } catch {
      return;
    }
    if (f.type === "res" && f.id === 0) {
      if (f.ok) {
        this.hello = (f.payload ?? {}) as Record<string, unknown>;
        this.backoff = 250;
        this.setState("open");
        for (const fn of this.queue.splice(0)) fn();
      } else this.lastError = f.error?.message ?? "login failed";
      return;
    }
    if (f.type === "res" && typeof f.id === "number") {
      const p = this.pending.get(f.id);
      this.pending.delete(f.id);
      if (!p) return;
      if (f.ok) p.resolve(f.payload);
      else p.reject(new GatewayError(f.error?.code ?? "internal", f.error?.message ?? "request failed"));
      return;
    }
    if (f.type === "event" && f.event) for (const fn of this.listeners.get(f.event) ?? []) fn(f.payload);
  }

  private setState(s: ConnState): void {
    this.state = s;
    for (const fn of this.listeners.get("$state") ?? []) fn(s);
  }

  /** Calls a websocket method; waits for the connection when it is not open yet. */
  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const send = (): void => {
        const id = this.nextId++;
        this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        this.ws?.send(JSON.stringify({ type: "req", id, method, params }));
      };
      if (this.state === "open") send();
      // Logged out: nothing will open the socket until a new token, so fail now instead of piling up.
      else if (this.state === "unauthorized") reject(new GatewayError("unauthorized", this.lastError));
      else this.queue.push(send);
    });
  }

  /** Subscribes to an event (`$state` for connection changes); returns the unsubscribe. */
  on(event: string, fn: Listener): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }
}

export const gateway = new Gateway();

/** Calls /api with the token; throws GatewayError with the API's error code. */
export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const token = getToken();
  const res = await fetch(path, {
    method: init.method ?? "GET",
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
  if (!res.ok)
    throw new GatewayError(data.error?.code ?? String(res.status), data.error?.message ?? res.statusText);
  return data as T;
}
