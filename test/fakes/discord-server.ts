/**
 * A fake Discord for tests: one node:http server on 127.0.0.1 (port 0) serving the REST API under
 * `/api/v10` and a websocket gateway speaking the real protocol (HELLO, IDENTIFY -> READY +
 * GUILD_CREATE, heartbeat ACKs, RESUME -> replay + RESUMED, INVALID_SESSION), so discord.js runs
 * unmodified against it with `rest: { api: fake.apiBase }`.
 *
 * discord.js builds REST URLs as `${api}/v10${route}` and connects the gateway to the `url` from
 * `GET /gateway/bot` plus `?v=10&encoding=json` (no `compress` param unless zlib-sync is
 * installed). Every REST call is recorded; 429s can be scripted with the headers discord.js's REST
 * queue reads (`retry-after`, `x-ratelimit-*`, `x-ratelimit-global`, `x-ratelimit-scope`).
 *
 * Invariants: the gateway session survives a dropped socket — events dispatched while the bot is
 * disconnected are buffered and replayed on RESUME (events with a sequence above the client's);
 * a resume with an unknown session gets op 9 (not resumable) and the client re-identifies.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { parseMultipart } from "./multipart.js";

/** One recorded REST call. */
export interface RestCall {
  method: string;
  /** Path below `/api/v10`, e.g. `/channels/1/messages`. */
  path: string;
  query: string;
  body: unknown;
  auth: string | undefined;
  status: number;
  at: number;
}

/** A file the bot uploaded (multipart `files[n]`). */
export interface Upload {
  field: string;
  name: string;
  data: Buffer;
  channelId: string;
  /** The message text sent with it. */
  content?: string;
}

/** A message as the fake stores it (what the bot sent, edited or deleted). */
export interface FakeMessage {
  id: string;
  channelId: string;
  content: string;
  components: unknown[];
  allowedMentions: unknown;
  edits: number;
  deleted: boolean;
  /** The content history: the first send and every edit. */
  history: string[];
}

export interface FakeGuild {
  id: string;
  name?: string;
  /** Text channels (type 0) of the guild. */
  channels: { id: string; name?: string }[];
  /** Public threads (type 11) and their parent channel. */
  threads?: { id: string; parentId: string; name?: string }[];
}

export interface FakeDiscordOptions {
  /** Bot token the fake accepts (anything else gets 401 / gateway close 4004). */
  token?: string;
  botId?: string;
  botName?: string;
  applicationId?: string;
  guilds?: FakeGuild[];
  /** HELLO heartbeat interval (ms). */
  heartbeatIntervalMs?: number;
}

/** A scripted refusal: the next `times` matching calls get `status` with a Discord error body. */
export interface RefusalScript {
  method?: string;
  path: RegExp;
  times: number;
  status: number;
  code?: number;
  message?: string;
}

/** A scripted rate limit: the next `times` matching calls get 429. */
export interface RateLimitScript {
  method?: string;
  path: RegExp;
  times: number;
  /** Seconds, as Discord sends them (decimals allowed). */
  retryAfter: number;
  global?: boolean;
  scope?: "user" | "shared" | "global";
}

interface GatewaySession {
  id: string;
  seq: number;
  events: { s: number; t: string; d: unknown }[];
  ws: WebSocket | undefined;
}

export interface FakeUser {
  id: string;
  username: string;
  global_name?: string | null;
  bot?: boolean;
}

let snowflakeCounter = 0n;
/** Unique, increasing snowflake-like ids. */
export function snowflake(): string {
  snowflakeCounter += 1n;
  return String(1_300_000_000_000_000_000n + BigInt(Date.now()) * 1000n + snowflakeCounter);
}

function user(u: FakeUser): Record<string, unknown> {
  return {
    id: u.id,
    username: u.username,
    global_name: u.global_name ?? null,
    discriminator: "0",
    avatar: null,
    bot: u.bot ?? false,
  };
}

export class FakeDiscord {
  readonly token: string;
  readonly bot: FakeUser;
  readonly applicationId: string;
  readonly guilds: FakeGuild[];
  readonly calls: RestCall[] = [];
  /** Files the bot uploaded, in order. */
  readonly uploads: Upload[] = [];
  /** Attachment bytes served at `/attachments/<id>/<name>` (the CDN), by id. */
  private attachments = new Map<string, Buffer>();
  /** GETs of attachment URLs (to prove a refused file was never downloaded). */
  attachmentDownloads = 0;
  readonly messages = new Map<string, FakeMessage>();
  /** DM channels opened via POST /users/@me/channels: user id -> channel id. */
  readonly dmChannels = new Map<string, string>();
  /** Registered application commands: `global` or the guild id -> commands. */
  readonly commands = new Map<string, unknown[]>();
  /** Interaction callbacks received: interaction id -> callback bodies. */
  readonly interactionCallbacks = new Map<string, unknown[]>();
  /** Gateway counters. */
  readonly gateway = { connections: 0, identifies: 0, resumes: 0, heartbeats: 0, queries: [] as string[] };
  private session: GatewaySession | undefined;
  private limits: RateLimitScript[] = [];
  private identifyCloseCode: number | undefined;
  private refusals: RefusalScript[] = [];
  private server: Server;
  private wss: WebSocketServer;
  private sockets = new Set<WebSocket>();
  private heartbeatIntervalMs: number;
  private waiters: { check: () => boolean; resolve: () => void }[] = [];
  port = 0;

  constructor(opts: FakeDiscordOptions = {}) {
    this.token = opts.token ?? "fake-discord-token";
    this.bot = { id: opts.botId ?? "900000000000000001", username: opts.botName ?? "familiar", bot: true };
    this.applicationId = opts.applicationId ?? "900000000000000002";
    this.guilds = opts.guilds ?? [];
    this.heartbeatIntervalMs = opts.heartbeatIntervalMs ?? 41_250;
    this.server = createServer((req, res) => void this.onRequest(req, res));
    this.wss = new WebSocketServer({ noServer: true });
    this.server.on("upgrade", (req, socket, head) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname !== "/gateway" && url.pathname !== "/resume") {
        socket.destroy();
        return;
      }
      this.gateway.queries.push(url.search);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws));
    });
  }

  /** Listens on 127.0.0.1, port 0. */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** The value for discord.js `rest.api` (and `channels.discord.api_base`). */
  get apiBase(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /** True while a socket is open and identified/resumed. */
  get connected(): boolean {
    return this.session?.ws !== undefined;
  }

  async close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Makes every following IDENTIFY close the socket with `code` (e.g. 4014 disallowed intents). */
  rejectIdentify(code: number | undefined): void {
    this.identifyCloseCode = code;
  }

  /** Scripts error answers (e.g. 403 Missing Access) for the next matching calls. */
  refuse(script: RefusalScript): void {
    this.refusals.push({ ...script });
  }

  /** Scripts 429 answers for the next matching calls. */
  rateLimit(script: RateLimitScript): void {
    this.limits.push({ ...script });
  }

  /** Sends a gateway event (buffered for replay while the bot is disconnected). Returns its sequence. */
  dispatch(t: string, d: unknown): number {
    const s = this.session;
    if (!s) throw new Error("fake discord: no gateway session (the bot has not identified)");
    s.seq += 1;
    s.events.push({ s: s.seq, t, d });
    s.ws?.send(JSON.stringify({ op: 0, t, s: s.seq, d }));
    return s.seq;
  }

  /** Closes the gateway socket abnormally (no close frame, code 1006): the client resumes. */
  dropConnection(): void {
    const ws = this.session?.ws;
    if (this.session) this.session.ws = undefined;
    ws?.terminate();
  }

  /**
   * Registers attachment bytes on the fake CDN; returns the attachment object for a message's
   * `attachments` (`size` may claim more than the bytes, to test limits without big buffers).
   */
  addAttachment(
    data: Buffer,
    filename: string,
    opts: { contentType?: string; size?: number; durationSecs?: number } = {},
  ): Record<string, unknown> {
    const id = snowflake();
    this.attachments.set(id, data);
    const url = `http://127.0.0.1:${this.port}/attachments/${id}/${filename}`;
    return {
      id,
      filename,
      size: opts.size ?? data.length,
      url,
      proxy_url: url,
      ...(opts.contentType ? { content_type: opts.contentType } : {}),
      ...(opts.durationSecs !== undefined ? { duration_secs: opts.durationSecs, waveform: "AAAA" } : {}),
    };
  }

  /** Dispatches MESSAGE_CREATE from a user. Returns the message payload (with its id). */
  userMessage(m: {
    channelId: string;
    content: string;
    author: FakeUser;
    guildId?: string;
    mentionsBot?: boolean;
    id?: string;
    /** Extra fields merged into the payload (e.g. `referenced_message`, `attachments`). */
    extra?: Record<string, unknown>;
  }): Record<string, unknown> {
    const d: Record<string, unknown> = {
      id: m.id ?? snowflake(),
      channel_id: m.channelId,
      author: user(m.author),
      content: m.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: m.mentionsBot ? [user(this.bot)] : [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
      flags: 0,
      ...(m.guildId
        ? {
            guild_id: m.guildId,
            member: { roles: [], joined_at: new Date().toISOString(), deaf: false, mute: false },
          }
        : {}),
      ...m.extra,
    };
    this.dispatch("MESSAGE_CREATE", d);
    return d;
  }

  /**
   * Dispatches INTERACTION_CREATE: a slash command (`command`) or a button press (`customId`).
   * Returns the interaction id and token (follow-ups go to `/webhooks/<app>/<token>`).
   */
  interaction(i: {
    channelId: string;
    user: FakeUser;
    guildId?: string;
    command?: { name: string; options?: { name: string; value: string }[] };
    customId?: string;
  }): { id: string; token: string } {
    const id = snowflake();
    const token = `itoken-${id}`;
    const who = user(i.user);
    const d: Record<string, unknown> = {
      id,
      application_id: this.applicationId,
      type: i.command ? 2 : 3,
      token,
      version: 1,
      channel_id: i.channelId,
      channel: { id: i.channelId, type: i.guildId ? 0 : 1 },
      locale: "en-US",
      app_permissions: "0",
      entitlements: [],
      authorizing_integration_owners: {},
      context: i.guildId ? 0 : 1,
      ...(i.guildId
        ? {
            guild_id: i.guildId,
            guild_locale: "en-US",
            member: {
              user: who,
              roles: [],
              permissions: "0",
              joined_at: new Date().toISOString(),
              deaf: false,
              mute: false,
            },
          }
        : { user: who }),
      data: i.command
        ? {
            id: snowflake(),
            name: i.command.name,
            type: 1,
            options: (i.command.options ?? []).map((o) => ({ name: o.name, type: 3, value: o.value })),
          }
        : { custom_id: i.customId ?? "", component_type: 2 },
      ...(i.command
        ? {}
        : { message: { id: snowflake(), channel_id: i.channelId, content: "", author: user(this.bot) } }),
    };
    this.dispatch("INTERACTION_CREATE", d);
    return { id, token };
  }

  /** Messages in a channel (not deleted), oldest first. */
  channelMessages(channelId: string): FakeMessage[] {
    return [...this.messages.values()].filter((m) => m.channelId === channelId && !m.deleted);
  }

  /** REST calls matching a method and path pattern. */
  callsTo(method: string, path: RegExp): RestCall[] {
    return this.calls.filter((c) => c.method === method && path.test(c.path));
  }

  /**
   * Resolves when `check` holds: re-checked after every REST call and gateway frame, and polled
   * every 20 ms for conditions on the client's side (e.g. its status).
   */
  waitFor(check: () => boolean, timeoutMs = 20_000, what = "condition"): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(t);
        clearInterval(poll);
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const w = {
        check,
        resolve: () => {
          done();
          resolve();
        },
      };
      const poll = setInterval(() => {
        if (check()) w.resolve();
      }, 20);
      const t = setTimeout(() => {
        done();
        reject(new Error(`fake discord: timed out waiting for ${what}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  private poke(): void {
    for (const w of [...this.waiters]) if (w.check()) w.resolve();
  }

  // ---------------------------------------------------------------- gateway

  private onSocket(ws: WebSocket): void {
    this.sockets.add(ws);
    this.gateway.connections++;
    ws.on("close", () => {
      this.sockets.delete(ws);
      if (this.session?.ws === ws) this.session.ws = undefined;
      this.poke();
    });
    ws.on("error", () => undefined);
    ws.on("message", (raw) => this.onFrame(ws, raw.toString()));
    ws.send(
      JSON.stringify({ op: 10, d: { heartbeat_interval: this.heartbeatIntervalMs }, s: null, t: null }),
    );
  }

  private onFrame(ws: WebSocket, raw: string): void {
    let frame: { op?: number; d?: Record<string, unknown> | number | null };
    try {
      frame = JSON.parse(raw) as typeof frame;
    } catch {
      ws.close(4002, "Error while decoding payload.");
      return;
    }
    const d = typeof frame.d === "object" && frame.d !== null ? frame.d : {};
    switch (frame.op) {
      case 1:
        this.gateway.heartbeats++;
        ws.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
        break;
      case 2:
        this.onIdentify(ws, d);
        break;
      case 6:
        this.onResume(ws, d);
        break;
      default:
        break;
    }
    this.poke();
  }

  private onIdentify(ws: WebSocket, d: Record<string, unknown>): void {
    if (d.token !== this.token) {
      ws.close(4004, "Authentication failed.");
      return;
    }
    if (this.identifyCloseCode !== undefined) {
      ws.close(this.identifyCloseCode, "Disallowed intent(s).");
      return;
    }
    this.gateway.identifies++;
    const s: GatewaySession = { id: `session-${snowflake()}`, seq: 0, events: [], ws };
    this.session = s;
    this.dispatch("READY", {
      v: 10,
      user: { ...user(this.bot), verified: true, mfa_enabled: false, flags: 0 },
      guilds: this.guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: s.id,
      resume_gateway_url: `ws://127.0.0.1:${this.port}/resume`,
      shard: [0, 1],
      application: { id: this.applicationId, flags: 0 },
      private_channels: [],
      relationships: [],
      user_settings: {},
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
    });
    for (const g of this.guilds) this.dispatch("GUILD_CREATE", this.guildPayload(g));
  }

  private onResume(ws: WebSocket, d: Record<string, unknown>): void {
    const s = this.session;
    if (d.token !== this.token || !s || d.session_id !== s.id) {
      ws.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
      return;
    }
    this.gateway.resumes++;
    s.ws = ws;
    const from = typeof d.seq === "number" ? d.seq : 0;
    for (const e of s.events) if (e.s > from) ws.send(JSON.stringify({ op: 0, t: e.t, s: e.s, d: e.d }));
    this.dispatch("RESUMED", {});
  }

  private guildPayload(g: FakeGuild): Record<string, unknown> {
    return {
      id: g.id,
      name: g.name ?? `guild ${g.id}`,
      icon: null,
      owner_id: "1",
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      roles: [
        {
          id: g.id,
          name: "@everyone",
          permissions: "0",
          position: 0,
          color: 0,
          hoist: false,
          managed: false,
          mentionable: false,
          flags: 0,
        },
      ],
      emojis: [],
      stickers: [],
      features: [],
      mfa_level: 0,
      system_channel_flags: 0,
      premium_tier: 0,
      preferred_locale: "en-US",
      nsfw_level: 0,
      large: false,
      unavailable: false,
      member_count: 2,
      joined_at: new Date().toISOString(),
      members: [],
      presences: [],
      voice_states: [],
      threads: [],
      stage_instances: [],
      guild_scheduled_events: [],
      channels: g.channels.map((c, i) => ({
        id: c.id,
        type: 0,
        guild_id: g.id,
        name: c.name ?? `channel-${i}`,
        position: i,
        permission_overwrites: [],
        nsfw: false,
        parent_id: null,
      })),
    };
  }

  // ---------------------------------------------------------------- REST

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBuf = Buffer.concat(chunks);
    const rawBody = rawBuf.toString("utf8");
    let body: unknown = undefined;
    const ctype = String(req.headers["content-type"] ?? "");
    const att = /^\/attachments\/(\d+)\//.exec(url.pathname);
    if (att && req.method === "GET") {
      const a = this.attachments.get(att[1] ?? "");
      res.writeHead(a ? 200 : 404, { "content-type": "application/octet-stream" });
      res.end(a ?? "Not Found");
      this.attachmentDownloads++;
      return;
    }
    const uploads: Upload[] = [];
    if (ctype.includes("multipart/form-data")) {
      // discord.js sends files as multipart: `payload_json` plus `files[n]` parts.
      for (const part of parseMultipart(rawBuf, ctype)) {
        if (part.name === "payload_json") body = JSON.parse(part.data.toString("utf8")) as unknown;
        else if (part.filename !== undefined)
          uploads.push({ field: part.name, name: part.filename, data: part.data, channelId: "" });
      }
    } else if (rawBody) {
      try {
        body = JSON.parse(rawBody) as unknown;
      } catch {
        body = rawBody;
      }
    }
    const method = req.method ?? "GET";
    const pathname = decodeURIComponent(url.pathname);
    const path = pathname.startsWith("/api/v10") ? pathname.slice("/api/v10".length) : pathname;
    const auth = typeof req.headers.authorization === "string" ? req.headers.authorization : undefined;
    const call: RestCall = { method, path, query: url.search, body, auth, status: 0, at: Date.now() };
    this.calls.push(call);
    const reply = (status: number, json?: unknown, headers: Record<string, string> = {}): void => {
      call.status = status;
      res.writeHead(status, {
        ...(json !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      });
      res.end(json !== undefined ? JSON.stringify(json) : undefined);
      this.poke();
    };
    try {
      if (!url.pathname.startsWith("/api/v10/")) return reply(404, { message: "404: Not Found", code: 0 });
      const limit = this.limits.find((l) => (!l.method || l.method === method) && l.path.test(path));
      if (limit) {
        limit.times--;
        if (limit.times <= 0) this.limits.splice(this.limits.indexOf(limit), 1);
        const scope = limit.scope ?? (limit.global ? "global" : "user");
        return reply(
          429,
          {
            message: "You are being rate limited.",
            retry_after: limit.retryAfter,
            global: limit.global ?? false,
          },
          {
            "retry-after": String(limit.retryAfter),
            "x-ratelimit-limit": "5",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset-after": String(limit.retryAfter),
            "x-ratelimit-bucket": "fake-bucket",
            "x-ratelimit-scope": scope,
            ...(limit.global ? { "x-ratelimit-global": "true" } : {}),
          },
        );
      }
      const refusal = this.refusals.find((l) => (!l.method || l.method === method) && l.path.test(path));
      if (refusal) {
        refusal.times--;
        if (refusal.times <= 0) this.refusals.splice(this.refusals.indexOf(refusal), 1);
        return reply(refusal.status, {
          message: refusal.message ?? "Missing Access",
          code: refusal.code ?? 50001,
        });
      }
      // Interaction callbacks and webhooks authenticate with their token in the path, not the bot token.
      const tokenRoute = path.startsWith("/interactions/") || path.startsWith("/webhooks/");
      if (!tokenRoute && auth !== `Bot ${this.token}`)
        return reply(401, { message: "401: Unauthorized", code: 0 });
      return this.route(method, path, body, reply, uploads);
    } catch (err) {
      return reply(500, { message: (err as Error).message, code: 0 });
    }
  }

  private route(
    method: string,
    path: string,
    body: unknown,
    reply: (status: number, json?: unknown, headers?: Record<string, string>) => void,
    uploads: Upload[] = [],
  ): void {
    const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    let m: RegExpExecArray | null;
    if (method === "GET" && (path === "/gateway/bot" || path === "/gateway"))
      return reply(200, {
        url: `ws://127.0.0.1:${this.port}/gateway`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 },
      });
    if (method === "GET" && path === "/users/@me") return reply(200, user(this.bot));
    if (method === "GET" && path === "/applications/@me")
      return reply(200, { id: this.applicationId, name: this.bot.username, flags: 0, bot: user(this.bot) });
    if (method === "POST" && path === "/users/@me/channels") {
      const rid = String(b.recipient_id ?? "");
      if (!/^\d+$/.test(rid)) return reply(400, { message: "Invalid Form Body", code: 50035 });
      let cid = this.dmChannels.get(rid);
      if (!cid) {
        cid = snowflake();
        this.dmChannels.set(rid, cid);
      }
      return reply(200, {
        id: cid,
        type: 1,
        recipients: [{ id: rid, username: `user${rid}`, discriminator: "0" }],
      });
    }
    if ((m = /^\/channels\/(\d+)$/.exec(path)) && method === "GET") {
      const ch = this.channelPayload(m[1] ?? "");
      return ch ? reply(200, ch) : reply(404, { message: "Unknown Channel", code: 10003 });
    }
    if (/^\/channels\/(\d+)\/typing$/.test(path) && method === "POST") return reply(204);
    if ((m = /^\/channels\/(\d+)\/messages$/.exec(path)) && method === "POST") {
      const stored = this.storeMessage(m[1] ?? "", b);
      for (const u of uploads)
        this.uploads.push({ ...u, channelId: m[1] ?? "", content: String(b.content ?? "") });
      return reply(200, stored);
    }
    if ((m = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path))) {
      const msg = this.messages.get(m[2] ?? "");
      if (!msg || msg.deleted || msg.channelId !== m[1])
        return reply(404, { message: "Unknown Message", code: 10008 });
      if (method === "PATCH") return reply(200, this.editMessage(msg, b));
      if (method === "DELETE") {
        msg.deleted = true;
        return reply(204);
      }
    }
    if ((m = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path)) && method === "POST") {
      const id = m[1] ?? "";
      const list = this.interactionCallbacks.get(id) ?? [];
      list.push(body);
      this.interactionCallbacks.set(id, list);
      // Type 4 (message) creates the original response right away.
      const data = (b.data ?? {}) as Record<string, unknown>;
      if (b.type === 4) this.storeMessage(`interaction:${m[2] ?? ""}`, data, "@original");
      return reply(204);
    }
    if ((m = /^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/([^/]+))?$/.exec(path))) {
      const token = m[2] ?? "";
      const mid = m[3];
      const chan = `interaction:${token}`;
      if (method === "POST" && !mid) return reply(200, this.storeMessage(chan, b));
      const key = mid === "@original" ? `${chan}:@original` : (mid ?? "");
      let msg = this.messages.get(key);
      if (method === "PATCH" && mid === "@original" && !msg) {
        this.storeMessage(chan, b, "@original");
        msg = this.messages.get(key);
        return reply(200, this.apiMessage(msg as FakeMessage));
      }
      if (!msg || msg.deleted) return reply(404, { message: "Unknown Message", code: 10008 });
      if (method === "PATCH") return reply(200, this.editMessage(msg, b));
      if (method === "DELETE") {
        msg.deleted = true;
        return reply(204);
      }
    }
    if ((m = /^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/.exec(path)) && method === "PUT") {
      const list = (Array.isArray(body) ? body : []).map((c) => ({
        ...(c as Record<string, unknown>),
        id: snowflake(),
        application_id: this.applicationId,
        version: snowflake(),
      }));
      this.commands.set(m[2] ?? "global", list);
      return reply(200, list);
    }
    return reply(404, { message: `404: Not Found (${method} ${path})`, code: 0 });
  }

  private channelPayload(id: string): Record<string, unknown> | undefined {
    for (const g of this.guilds) {
      const c = g.channels.find((x) => x.id === id);
      if (c)
        return {
          id,
          type: 0,
          guild_id: g.id,
          name: c.name ?? "channel",
          permission_overwrites: [],
          parent_id: null,
        };
      const t = g.threads?.find((x) => x.id === id);
      if (t)
        return {
          id,
          type: 11,
          guild_id: g.id,
          name: t.name ?? "thread",
          parent_id: t.parentId,
          thread_metadata: {
            archived: false,
            auto_archive_duration: 1440,
            locked: false,
            archive_timestamp: new Date().toISOString(),
          },
        };
    }
    for (const [uid, cid] of this.dmChannels)
      if (cid === id)
        return { id, type: 1, recipients: [{ id: uid, username: `user${uid}`, discriminator: "0" }] };
    return undefined;
  }

  private storeMessage(
    channelId: string,
    b: Record<string, unknown>,
    fixedId?: string,
  ): Record<string, unknown> {
    const id = fixedId ? `${channelId}:${fixedId}` : snowflake();
    const content = typeof b.content === "string" ? b.content : "";
    if (content.length > 2000) throw new Error("content longer than 2000 characters");
    const msg: FakeMessage = {
      id,
      channelId,
      content,
      components: Array.isArray(b.components) ? (b.components as unknown[]) : [],
      allowedMentions: b.allowed_mentions,
      edits: 0,
      deleted: false,
      history: [content],
    };
    this.messages.set(id, msg);
    return this.apiMessage(msg);
  }

  private editMessage(msg: FakeMessage, b: Record<string, unknown>): Record<string, unknown> {
    if (typeof b.content === "string") {
      if (b.content.length > 2000) throw new Error("content longer than 2000 characters");
      msg.content = b.content;
      msg.history.push(b.content);
    }
    if (Array.isArray(b.components)) msg.components = b.components as unknown[];
    if ("allowed_mentions" in b) msg.allowedMentions = b.allowed_mentions;
    msg.edits++;
    return this.apiMessage(msg);
  }

  private apiMessage(msg: FakeMessage): Record<string, unknown> {
    return {
      id: msg.id.includes(":") ? snowflake() : msg.id,
      channel_id: msg.channelId.startsWith("interaction:") ? "0" : msg.channelId,
      author: user(this.bot),
      content: msg.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: msg.edits > 0 ? new Date().toISOString() : null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      components: msg.components,
      pinned: false,
      type: 0,
      flags: 0,
    };
  }
}

/** Starts a fake Discord on 127.0.0.1 with a random port. */
export async function startFakeDiscord(opts: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  return new FakeDiscord(opts).start();
}
