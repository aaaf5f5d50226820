/**
 * The websocket side of the gateway (ws, noServer, sharing the HTTP port through `upgrade`).
 *
 * Invariants:
 * - the first frame must be a `connect` request with a valid token (when one is configured), a client
 *   name and a supported protocol version; anything else closes the socket with a clear reason;
 * - nothing a client sends can throw out of a handler: bad frames get error responses;
 * - oversize frames are closed by ws itself with 1009 (maxPayload tracks gateway.max_body_bytes);
 * - a client whose send buffer exceeds `maxBufferedBytes` is disconnected instead of growing memory;
 * - a connection's authority is the token it connected with, checked again on every request it sends
 *   and whenever the config changes (`revoke`): once that token is no longer the live one (rotated or
 *   removed by hot reload), the socket is closed with 4001 and the request is not run.
 *
 * Over 300 lines on purpose: the websocket protocol (handshake, auth, frames, back-pressure) is one
 * state machine.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketServer, WebSocket, RawData } from "ws";
import type { Logger } from "../log/logger.js";
import type { GatewayAuth } from "./auth.js";
import { bearerToken, clientAddress, requestUrl, type HttpError } from "./http-util.js";
import { rawToString, rejectUpgrade, sendFrame, truncateReason } from "./ws-wire.js";
import {
  MethodError,
  Params,
  PROTOCOL_VERSION,
  parseRequest,
  type EventFrame,
  type ReqFrame,
  type ResFrame,
} from "./protocol.js";

/** What a method handler knows about its caller. */
export interface WsConn {
  readonly id: number;
  readonly clientName: string;
  readonly address: string;
  /**
   * `owner` when the client asked for it at connect (the owner's CLI, the console): it may settle
   * any approval. `chat` (the default: the web chat, integrations): only its own.
   */
  readonly role: ClientRole;
  /** Sends an event to this client only. */
  send(event: string, payload: unknown): void;
  /** Runs `fn` when the socket closes (unsubscribe followers, etc.). */
  onClose(fn: () => void): void;
}

export type ClientRole = "owner" | "chat";

export type MethodHandler = (p: Params, conn: WsConn) => unknown;

export interface WsServerOptions {
  auth: GatewayAuth;
  /** Host and Origin checks, run before the handshake (403/421 without any work). */
  guard: (req: IncomingMessage) => HttpError | undefined;
  logger: Logger;
  maxPayload: () => number;
  methods: Map<string, MethodHandler>;
  /** Extra facts returned in the `connect` response (server version, default agent...). */
  hello: () => Record<string, unknown>;
  /** Disconnect a client whose unsent data exceeds this many bytes. */
  maxBufferedBytes?: number;
  /** Close a socket that has not sent `connect` within this many ms. */
  connectTimeoutMs?: number;
}

interface Client {
  ws: WebSocket;
  conn: WsConn;
  /** The token this connection authenticated with; kept to re-check it against the live one. */
  token: string;
  seq: number;
  closers: (() => void)[];
}

export class WsGateway {
  /** Built on the first upgrade: `ws` loads only when a websocket client connects (faster start). */
  private wss: Promise<WebSocketServer> | undefined;
  private maxPayload: number;
  private closed = false;
  private clients = new Set<Client>();
  private nextId = 1;

  constructor(private o: WsServerOptions) {
    this.maxPayload = o.maxPayload();
  }

  private server(): Promise<WebSocketServer> {
    this.wss ??= import("ws").then(({ WebSocketServer }) => {
      const wss = new WebSocketServer({ noServer: true, maxPayload: this.maxPayload, clientTracking: false });
      if (this.closed) wss.close();
      return wss;
    });
    return this.wss;
  }

  get size(): number {
    return this.clients.size;
  }

  /** Keeps ws's frame cap in step with gateway.max_body_bytes (read by ws for each new socket). */
  setMaxPayload(n: number): void {
    this.maxPayload = n;
    void this.wss?.then((wss) => {
      (wss.options as { maxPayload?: number }).maxPayload = n;
    });
  }

  /** `upgrade` listener for the HTTP server. Refuses wrong paths, Hosts and Origins before the handshake. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = requestUrl(req.url);
    if (!url || (url.pathname !== "/ws" && url.pathname !== "/"))
      return rejectUpgrade(socket, 404, "Not Found", "no websocket here");
    const refused = this.o.guard(req);
    if (refused)
      return rejectUpgrade(
        socket,
        refused.status,
        refused.status === 421 ? "Misdirected Request" : "Forbidden",
        refused.message,
        refused,
      );
    // No limiter here: the upgrade carries no credential yet (the token comes in the connect frame,
    // which the limiter checks), and a refused upgrade would lock out the owner's web chat.
    const addr = clientAddress(req);
    void this.server().then(
      (wss) => {
        if (this.closed || socket.destroyed) return void socket.destroy();
        wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, req, addr));
      },
      (err: unknown) => {
        this.o.logger.error({ err: (err as Error).message }, "websocket server failed to load");
        socket.destroy();
      },
    );
  }

  private accept(ws: WebSocket, req: IncomingMessage, addr: string): void {
    const headerToken = bearerToken(req);
    // ws closes oversize frames with 1009 but no reason; give the client a clear one.
    const limit = this.o.maxPayload();
    const close = ws.close.bind(ws);
    ws.close = (code?: number, reason?: string | Buffer) =>
      close(
        code,
        code === 1009 && !reason ? `frame exceeds gateway.max_body_bytes (${limit} bytes)` : reason,
      );
    let client: Client | undefined;
    const timer = setTimeout(
      () => ws.close(1008, "no connect frame received in time"),
      this.o.connectTimeoutMs ?? 10_000,
    );
    timer.unref();
    ws.on("error", (err) => this.o.logger.debug({ err: err.message }, "websocket error"));
    ws.on("close", () => {
      clearTimeout(timer);
      if (!client) return;
      this.clients.delete(client);
      for (const fn of client.closers) {
        try {
          fn();
        } catch {
          /* cleanup must not throw */
        }
      }
    });
    // Frames that arrive while the connect frame's token waits for its turn (a slowed source) are
    // held, in order, and handled once the handshake succeeded; the hold is bounded.
    let handshaking: Promise<void> | undefined;
    let held = 0;
    ws.on("message", (data: RawData, isBinary: boolean) => {
      const text = isBinary ? undefined : rawToString(data);
      if (!client && !handshaking) {
        clearTimeout(timer);
        handshaking = this.handshake(ws, text, addr, headerToken).then((c) => {
          if (!c) return;
          if (ws.readyState !== ws.OPEN) return;
          client = c;
          this.clients.add(c);
        });
        return;
      }
      if (!client) {
        if (++held > 32) return void ws.close(1008, "too many frames before the connect answer");
        void handshaking!.then(() => {
          if (client) this.frame(client, text);
        });
        return;
      }
      this.frame(client, text);
    });
  }

  /** One frame from a connected client. */
  private frame(client: Client, text: string | undefined): void {
    if (text === undefined) {
      this.reply(client, {
        type: "res",
        id: null,
        ok: false,
        error: { code: "invalid_frame", message: "binary frames are not supported; send JSON text" },
      });
      return;
    }
    void this.dispatch(client, text);
  }

  private async handshake(
    ws: WebSocket,
    text: string | undefined,
    addr: string,
    headerToken?: string,
  ): Promise<Client | undefined> {
    const parsed = text === undefined ? undefined : parseRequest(text);
    if (!parsed?.ok || parsed.frame.method !== "connect") {
      ws.close(1008, 'first frame must be a connect request {type:"req", method:"connect"}');
      return undefined;
    }
    const frame = parsed.frame;
    const fail = (code: string, message: string, closeCode: number): undefined => {
      sendFrame(ws, { type: "res", id: frame.id, ok: false, error: { code, message } });
      ws.close(closeCode, truncateReason(message));
      return undefined;
    };
    let p: Params;
    try {
      p = new Params(frame.params);
    } catch (err) {
      return fail("invalid_params", (err as Error).message, 1008);
    }
    const protocol = p.o.protocol;
    if (protocol !== PROTOCOL_VERSION)
      return fail(
        "unsupported_protocol",
        `protocol version ${JSON.stringify(protocol)} is not supported (server speaks ${PROTOCOL_VERSION})`,
        1002,
      );
    const clientInfo = p.o.client;
    const name =
      typeof clientInfo === "object" &&
      clientInfo !== null &&
      typeof (clientInfo as { name?: unknown }).name === "string"
        ? String((clientInfo as { name: string }).name).slice(0, 64)
        : typeof clientInfo === "string"
          ? clientInfo.slice(0, 64)
          : undefined;
    if (!name) return fail("invalid_params", "params.client.name: expected the client's name", 1008);
    const token = typeof p.o.token === "string" ? p.o.token : headerToken;
    const auth = await this.o.auth.check(addr, token);
    if (!auth.ok) return fail(auth.error.code, auth.error.message, 1008);
    const role = p.o.role ?? "chat";
    if (role !== "owner" && role !== "chat")
      return fail("invalid_params", 'params.role: expected "owner" or "chat"', 1008);

    const id = this.nextId++;
    const c: Client = {
      ws,
      token: token ?? "",
      seq: 0,
      closers: [],
      conn: {
        id,
        clientName: name,
        address: addr,
        role,
        send: (event, payload) => this.sendEvent(c, event, payload),
        onClose: (fn) => c.closers.push(fn),
      },
    };
    this.reply(c, {
      type: "res",
      id: frame.id,
      ok: true,
      payload: { protocol: PROTOCOL_VERSION, connId: id, role, ...this.o.hello() },
    });
    return c;
  }

  private async dispatch(c: Client, text: string): Promise<void> {
    if (!this.o.auth.isCurrent(c.token)) return this.revokeClient(c);
    const parsed = parseRequest(text);
    if (!parsed.ok) return this.reply(c, parsed.res);
    const f: ReqFrame = parsed.frame;
    const handler = this.o.methods.get(f.method);
    if (!handler) {
      const message = f.method === "connect" ? "already connected" : `unknown method "${f.method}"`;
      return this.reply(c, {
        type: "res",
        id: f.id,
        ok: false,
        error: { code: f.method === "connect" ? "invalid_frame" : "unknown_method", message },
      });
    }
    try {
      const payload = await handler(new Params(f.params), c.conn);
      this.reply(c, { type: "res", id: f.id, ok: true, payload: payload ?? {} });
    } catch (err) {
      const code = err instanceof MethodError ? err.code : "internal";
      if (code === "internal")
        this.o.logger.warn({ method: f.method, err: (err as Error).message }, "gateway method failed");
      this.reply(c, {
        type: "res",
        id: f.id,
        ok: false,
        error: { code, message: (err as Error)?.message ?? String(err) },
      });
    }
  }

  private reply(c: Client, frame: ResFrame): void {
    this.write(c, JSON.stringify(frame));
  }

  private sendEvent(c: Client, event: string, payload: unknown): void {
    const frame: EventFrame = { type: "event", event, payload, seq: ++c.seq };
    this.write(c, JSON.stringify(frame));
  }

  private write(c: Client, text: string): void {
    if (c.ws.readyState !== c.ws.OPEN) return;
    if (c.ws.bufferedAmount > (this.o.maxBufferedBytes ?? 8 * 1024 * 1024)) {
      this.o.logger.warn(
        { client: c.conn.clientName, buffered: c.ws.bufferedAmount },
        "disconnecting slow websocket client",
      );
      this.clients.delete(c);
      c.ws.close(1013, "slow consumer: send buffer limit exceeded");
      // A peer that does not read will not read the close frame either.
      setTimeout(() => c.ws.terminate(), 1000).unref();
      return;
    }
    c.ws.send(text);
  }

  /** Sends an event to the open connection `id`; false when it is gone (or never was). */
  sendTo(id: number, event: string, payload: unknown): boolean {
    for (const c of this.clients)
      if (c.conn.id === id) {
        if (c.ws.readyState !== c.ws.OPEN) return false;
        this.sendEvent(c, event, payload);
        return true;
      }
    return false;
  }

  /** Sends an event to every connected client whose connection passes `pred`. */
  broadcastIf(pred: (conn: WsConn) => boolean, event: string, payload: unknown): void {
    for (const c of this.clients) if (pred(c.conn)) this.sendEvent(c, event, payload);
  }

  /** Sends an event to every connected client. Serialises once per client (seq differs). */
  broadcast(event: string, payload: unknown): void {
    for (const c of this.clients) this.sendEvent(c, event, payload);
  }

  /**
   * Closes every connection whose token is no longer the live one (call after a config reload).
   * Returns how many were closed.
   */
  revoke(): number {
    let n = 0;
    for (const c of [...this.clients])
      if (!this.o.auth.isCurrent(c.token)) {
        this.revokeClient(c);
        n++;
      }
    return n;
  }

  private revokeClient(c: Client): void {
    this.clients.delete(c);
    c.ws.close(CLOSE_TOKEN_REVOKED, "the gateway token changed: reconnect with the new token");
    // A peer that does not answer the close handshake is cut off anyway.
    setTimeout(() => c.ws.terminate(), 1000).unref();
  }

  close(): void {
    for (const c of this.clients) c.ws.close(1001, "gateway shutting down");
    this.clients.clear();
    this.closed = true;
    void this.wss?.then((wss) => wss.close());
  }
}

/** Close code of a connection whose token was rotated or removed (application range 4000-4999). */
export const CLOSE_TOKEN_REVOKED = 4001;
