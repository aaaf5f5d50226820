/**
 * The gateway service: registers every gateway route on the daemon's one HTTP listener (metrics,
 * OpenAI API, the /api REST surface, webhooks, web chat) and its websocket, forwards bus events to websocket clients and
 * sends the periodic `tick`. Other routes on the port reuse `runtime` (a GatewayRuntime) for their
 * auth and body parsing.
 */
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import type { TimerHandle } from "../core/clock.js";
import { ChannelError, type SendOptions } from "../core/outbox.js";
import { SessionStore } from "../session/session-store.js";
import { GatewayAuth } from "./auth.js";
import { doorWidening } from "./door-watch.js";
import { checkRequest } from "./request-guard.js";
import { ensureGatewayToken } from "./token-store.js";
import { ChatEventMapper } from "./chat-events.js";
import { clientAddress, bearerToken, sendError, HttpError } from "./http-util.js";
import { LogTail } from "./log-tail.js";
import { GatewayMetrics } from "./metrics.js";
import { adminMethods } from "./methods-admin.js";
import { approvalMethods } from "./methods-approvals.js";
import { containmentMethods } from "./methods-containment.js";
import { chatMethods } from "./methods-chat.js";
import { consoleMethods } from "./methods-console.js";
import { nameMethods } from "./methods-names.js";
import { pairingLoader } from "./pairing-access.js";
import { fileMethods } from "./methods-files.js";
import { openAiRoutes } from "./openai-api.js";
import { apiRoutes } from "./api/api-router.js";
import { GatewayRuntime, type GatewayDeps } from "./runtime.js";
import { consoleRoute } from "./console-route.js";
import { connIdOf } from "./conn-target.js";
import { webChatRoute } from "./web-chat.js";
import { webhookRoutes } from "./webhooks.js";
import { createSessionPost } from "./session-post.js";
import type { SessionPost } from "../core/session-post.js";
import { WsGateway, type MethodHandler } from "./ws-server.js";

export type { GatewayDeps } from "./runtime.js";

export interface GatewayOptions {
  /** Interval of the `tick` event (default 30 s). */
  tickMs?: number;
  /** Send-buffer limit per websocket client before it is disconnected (default 8 MiB). */
  maxBufferedBytes?: number;
}

export interface GatewayService extends Service {
  readonly runtime: GatewayRuntime;
  readonly ws: WsGateway;
  readonly metrics: GatewayMetrics;
  /** The generated token's file (used whenever `gateway.token` is unset). */
  readonly tokenFile: string;
  /**
   * Delivers to one live connection (`gateway:conn:<id>`): an approval request as the
   * `approval.request` event, anything else as `notice`. Throws CHANNEL_UNKNOWN_TARGET when the
   * connection is gone, so an approval nobody can see is denied at once instead of waiting.
   */
  deliver(target: string, text: string, opts?: SendOptions): Promise<void>;
  /** Posts a scheduled job's reply into the web chat / `familiar chat` session it was asked in. */
  readonly sessionPost: SessionPost;
}

export function createGatewayService(
  ctx: CoreContext,
  deps: GatewayDeps,
  opts: GatewayOptions = {},
): GatewayService {
  // Created (0600) at first start, reused after: the gateway is never without a token.
  const generated = ensureGatewayToken(ctx.config().data_dir);
  if (generated.narrowedFrom)
    ctx.logger.warn(
      { file: generated.file, mode: generated.narrowedFrom },
      "the gateway token file was readable by others; narrowed it to 0600 (consider replacing the token)",
    );
  const auth = new GatewayAuth(ctx.config, ctx.clock, generated.token);
  const runtime = new GatewayRuntime(ctx, deps, auth, new SessionStore(ctx.db, () => ctx.clock.now()));
  const logs = new LogTail();
  const metrics = new GatewayMetrics(ctx.bus, () => ctx.clock.now());
  const methods = new Map<string, MethodHandler>();
  const ws: WsGateway = new WsGateway({
    auth,
    guard: (req) => checkRequest(req, ctx.config().gateway),
    logger: ctx.logger,
    maxPayload: () => ctx.config().gateway.max_body_bytes,
    methods,
    hello: () => ({
      server: { name: "familiar" },
      defaultAgent: ctx.config().agents.default,
      methods: [...methods.keys()],
    }),
    ...(opts.maxBufferedBytes !== undefined ? { maxBufferedBytes: opts.maxBufferedBytes } : {}),
  });
  // The console's set first: a method of the same name registered after it wins (approvals.*).
  for (const [name, fn] of [
    ...consoleMethods(runtime, pairingLoader(runtime)),
    ...chatMethods(runtime),
    ...adminMethods(runtime, logs, () => ws.size),
    ...fileMethods(runtime),
    ...approvalMethods(runtime),
    ...containmentMethods(runtime),
    ...nameMethods(runtime),
  ])
    methods.set(name, fn);

  const offs: (() => void)[] = [];
  let tick: TimerHandle | undefined;
  const onUpgrade = ws.handleUpgrade.bind(ws);

  const metricsRoute = async (
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
    url: URL,
  ): Promise<boolean> => {
    if (url.pathname !== "/metrics" || req.method !== "GET") return false;
    // Metrics reveal activity: they need the token like every other route.
    const r = await auth.check(clientAddress(req), bearerToken(req));
    if (!r.ok) {
      sendError(res, r.error);
      return true;
    }
    const text = metrics.render({
      queueDepth: () => runtime.maybeHost()?.queueDepth() ?? 0,
      channels: () => deps.channels.statuses(),
      wsClients: () => ws.size,
      uptimeSeconds: () => Math.round((Date.now() - ctx.startedAt) / 1000),
    });
    res.writeHead(200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
    return true;
  };

  return {
    name: "gateway",
    runtime,
    ws,
    metrics,
    sessionPost: createSessionPost(runtime, runtime.watchers, (id, event, payload) =>
      ws.sendTo(id, event, payload),
    ),
    tokenFile: generated.file,
    async deliver(target, text, opts) {
      const id = connIdOf(target);
      if (id !== undefined && opts?.approvalId) {
        const question = approvalEvent(deps.approvals?.show(opts.approvalId), opts.approvalId, text, opts);
        if (!ws.sendTo(id, "approval.request", question))
          throw new ChannelError("CHANNEL_UNKNOWN_TARGET", `no gateway client is connected as ${target}`);
        // The web chat on another device (or after a reload, on a new connection) shows it too, in
        // the session it belongs to; answering there needs the hash (methods-approvals.ts).
        ws.broadcastIf((c) => c.id !== id && c.role === "chat", "approval.opened", question);
        return;
      }
      if (id === undefined || !ws.sendTo(id, "notice", { text }))
        throw new ChannelError("CHANNEL_UNKNOWN_TARGET", `no gateway client is connected as ${target}`);
    },
    async start() {
      const { http } = deps;
      // Host and Origin before any route does work (the websocket upgrade checks them itself).
      http.guard((req) => checkRequest(req, ctx.config().gateway));
      http.route(metricsRoute);
      http.route(openAiRoutes(runtime));
      http.route(apiRoutes(runtime));
      http.route(webhookRoutes(runtime));
      http.route(webChatRoute());
      http.route(consoleRoute());
      http.server.on("upgrade", onUpgrade);
      logs.attach(ctx.logger);

      const mapper = new ChatEventMapper();
      offs.push(
        ctx.bus.on("chat", ({ sessionKey, agentId, event }) => {
          if (ws.size === 0 && event.type !== "error" && event.type !== "turn_end") return;
          const payload = mapper.map(sessionKey, agentId, event);
          if (payload && ws.size > 0) ws.broadcast("chat", payload);
        }),
        ctx.bus.on("session.changed", (p) => ws.broadcast("session.changed", p)),
        // A closed question leaves the console and the web chat (the owner's clients and the
        // connection it was asked on; nobody else learns its id).
        ...(deps.approvals
          ? [
              deps.approvals.onClosed((a, out) => {
                const payload = {
                  id: a.id,
                  decision: out.decision,
                  reason: out.reason,
                  ...(out.withdrawn ? { withdrawn: true } : {}),
                };
                // Asked on a gateway connection: every web chat that may show it drops its card.
                const conn = connIdOf(a.replyTarget);
                ws.broadcastIf(
                  (c) => c.role === "owner" || (conn !== undefined && (c.id === conn || c.role === "chat")),
                  "approval.closed",
                  payload,
                );
              }),
            ]
          : []),
        ctx.bus.on("config.error", (p) => ws.broadcast("config.error", p)),
        ctx.bus.on("heartbeat", (p) => ws.broadcast("heartbeat", p)),
        ctx.bus.on("cron", (p) => ws.broadcast("cron", p)),
        ctx.bus.on("channel.state", (p) => ws.broadcast("channel.state", p)),
        ctx.onConfig((next, prev, changed) => {
          const widened = doorWidening(prev.gateway, next.gateway);
          if (widened.length)
            ctx.logger.warn(
              { changes: widened },
              `gateway access widened by a reload: ${widened.join("; ")}`,
            );
          ws.setMaxPayload(next.gateway.max_body_bytes);
          // A rotated or removed token takes its connections with it (a leaked token is locked out).
          if (prev.gateway.token !== next.gateway.token) {
            const closed = ws.revoke();
            if (closed)
              ctx.logger.warn({ closed }, "closed websocket connections that used the old gateway token");
          }
          ws.broadcast("config.reloaded", { changed });
        }),
      );
      // On the context clock (re-armed each time), so a FakeClock drives it in tests.
      const tickMs = opts.tickMs ?? 30_000;
      const onTick = (): void => {
        if (ws.size > 0)
          ws.broadcast("tick", {
            ts: ctx.clock.now(),
            queueDepth: runtime.maybeHost()?.queueDepth() ?? 0,
          });
        tick = ctx.clock.setTimeout(onTick, tickMs);
        tick.unref?.();
      };
      tick = ctx.clock.setTimeout(onTick, tickMs);
      tick.unref?.();
    },
    async stop() {
      if (tick) ctx.clock.clearTimeout(tick);
      tick = undefined;
      for (const off of offs.splice(0)) off();
      deps.http.server.off("upgrade", onUpgrade);
      ws.close();
      logs.detach();
      metrics.close();
    },
    health(): ServiceHealth {
      return {
        state: "ok",
        clients: ws.size,
        // /healthz is public: say where the token comes from, not where it lives.
        auth: auth.source() === "config" ? "token (gateway.token)" : "token (generated)",
      };
    },
  };
}

export { HttpError };

/**
 * The `approval.request` / `approval.opened` payload: the question as the chat shows it, its session
 * (a web chat shows only its open session's cards) and the hash its Approve must carry back.
 */
function approvalEvent(
  a: { sessionKey: string; payloadHash: string } | undefined,
  id: string,
  text: string,
  opts: SendOptions,
): { id: string; text: string; sessionKey?: string; hash?: string } {
  const hash = a?.payloadHash ?? opts.approvalHash;
  return { id, text, ...(a ? { sessionKey: a.sessionKey } : {}), ...(hash ? { hash } : {}) };
}
