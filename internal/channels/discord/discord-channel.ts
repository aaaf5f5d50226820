/**
 * The Discord channel (discord.js, loaded lazily by the daemon when `channels.discord.enabled`).
 *
 * Transport: discord.js owns the gateway (heartbeats, reconnects, RESUME) and the REST queue
 * (429s); this file reads raw MESSAGE_CREATE / INTERACTION_CREATE dispatches (so an uncached DM or
 * thread channel never drops a message), gates them (pairing, guild allow lists, mentions), claims
 * their id in SQLite (a replay is answered once, also after a restart) and hands them to the shared
 * InboundRouter, whose StreamRelay edits one message while the answer streams.
 *
 * Connection state is logged on every change and surfaced by `status()` (/healthz, familiar status).
 * An invalid token stops the channel with one clear error; the daemon keeps running.
 *
 * Over 300 lines on purpose: the transport (gateway client, interactions) of one platform;
 * lifecycle is in chat-channel-base.ts, translation in discord-inbound.ts.
 */
import {
  Client,
  Events,
  GatewayIntentBits,
  Options,
  Partials,
  Routes,
  type APIInteraction,
  type GatewayDispatchPayload,
  type GatewayMessageCreateDispatchData,
} from "discord.js";
import type {
  Channel,
  ChannelProbe,
  ChannelState,
  OutboundFile,
  OutboundFileKind,
  SendOptions,
} from "../channel.js";
import { performance } from "node:perf_hooks";
import { ChannelError } from "../channel.js";
import type { CoreContext } from "../../runtime/context.js";
import type { TimerHandle } from "../../core/clock.js";
import { PairingStore, pairingReply } from "../common/pairing.js";
import type { StreamRelay } from "../common/stream-relay.js";
import { createChatPipeline } from "../common/chat-pipeline.js";
import { ChatChannelBase, type ChatChannelDeps } from "../common/chat-channel-base.js";
import { ChannelIdentities } from "./channel-identities.js";
import { translateMessage } from "./discord-inbound.js";
import { NOT_AN_APPROVER } from "../../inbound/front-desk.js";
import type { InboundChat, InboundRouter } from "../../inbound/chat-router.js";
import { DISCORD_LIMITS } from "../common/chunking.js";
import { DiscordAdapter, interactionAddress, NO_MENTIONS, toChannelError } from "./discord-adapter.js";
import { SeenStore } from "./seen-store.js";
import { guildVerdict } from "./guild-gate.js";
import { commandText, slashCommandBodies } from "./slash-commands.js";

export const DEFAULT_API_BASE = "https://discord.com/api";
const EPHEMERAL = 1 << 6;

export type DiscordDeps = ChatChannelDeps;

/** The Discord channel: a Channel plus the Service lifecycle and health. */
export class DiscordChannel extends ChatChannelBase implements Channel {
  readonly id = "discord";
  readonly name = "discord";
  readonly pairing: PairingStore;
  readonly relay: StreamRelay;
  readonly router: InboundRouter;
  readonly adapter: DiscordAdapter;
  private seen: SeenStore;
  private client: Client | undefined;
  private me: { id: string; username: string; appId: string } | undefined;
  private identities: ChannelIdentities;
  private retryTimer: TimerHandle | undefined;
  private retryDelayMs = 1000;
  private stopping = false;
  private readyWaiters: (() => void)[] = [];

  constructor(
    ctx: CoreContext,
    private deps: DiscordDeps,
  ) {
    super(ctx, "discord", deps.media);
    this.identities = new ChannelIdentities(() => this.requireClient(), ctx.logger);
    this.pairing = new PairingStore(ctx.db, ctx.clock);
    this.seen = new SeenStore(ctx.db, () => ctx.clock.now());
    this.adapter = new DiscordAdapter(
      () => this.requireClient().rest,
      () => ({ ...DISCORD_LIMITS, maxLines: this.cfg().max_lines_per_message }),
      () => ctx.clock.now(),
    );
    ({ relay: this.relay, router: this.router } = createChatPipeline(ctx, "discord", this.adapter, {
      ...(deps.desk ? { desk: deps.desk } : {}),
      host: deps.host,
      ...(deps.registry ? { registry: deps.registry } : {}),
      ...(deps.approvals ? { approvals: deps.approvals } : {}),
      ...(deps.agentSources ? { agentSources: deps.agentSources } : {}),
      mayApprove: (id) => this.mayApprove(id),
      isOwner: (id) => this.isOwner(id),
      media: this.media,
      stream: () => this.cfg().stream,
    }));
  }

  /** Allowed users decide approvals (in a guild channel anyone may press a button or type `/approve`). */
  /**
   * The owner, for containment: the users of `allow_from` when it lists any (a paired user or a
   * group member then taints the session), else everyone allowed.
   */
  private isOwner(userId: string): boolean {
    const listed = this.cfg().allow_from.map(String);
    return listed.length ? listed.includes(String(userId)) : this.mayApprove(userId);
  }

  private mayApprove(userId: string): boolean {
    const cfg = this.cfg();
    return cfg.dm_policy === "open" || this.pairing.isAllowed("discord", userId, cfg.allow_from);
  }

  private cfg(): ReturnType<CoreContext["config"]>["channels"]["discord"] {
    return this.ctx.config().channels.discord;
  }

  private requireClient(): Client {
    if (!this.client) throw new ChannelError("CHANNEL_NOT_RUNNING", "the Discord channel is not running");
    return this.client;
  }

  protected identity(): string | undefined {
    return this.me ? `@${this.me.username}` : undefined;
  }

  /** Every state change is logged; `connected` releases `whenConnected` waiters. */
  protected override onState(prev: ChannelState, state: ChannelState, detail?: string): void {
    if (prev !== state) {
      const log = { channel: "discord", from: prev, to: state, ...(detail ? { detail } : {}) };
      if (state === "error") this.ctx.logger.error(log, `discord: ${detail ?? "error"}`);
      else this.ctx.logger.info(log, `discord: ${state}`);
    }
    if (state === "connected") for (const w of this.readyWaiters.splice(0)) w();
  }

  /** Resolves once the gateway is connected (READY or RESUMED). */
  whenConnected(): Promise<void> {
    if (this.st.state === "connected") return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** Connects in the background: never throws for a bad token or an unreachable Discord. */
  async start(): Promise<void> {
    this.watchConfig(
      ({ channels: { discord: a } }, { channels: { discord: b } }) =>
        a.enabled !== b.enabled || a.token !== b.token || a.api_base !== b.api_base,
      () => this.reconnect(),
    );
    this.stopping = false;
    this.connect();
  }

  /** Destroys the client and logs in again with the live config (the channel watchdog's remedy). */
  async restart(): Promise<void> {
    if (this.stopping) return;
    this.ctx.logger.warn({ channel: "discord" }, "discord: restarting the channel");
    this.lifecycle = this.lifecycle.then(() => this.reconnect());
    await this.lifecycle;
  }

  /**
   * A REST call the bot is allowed to make (GET /users/@me): its round trip. The websocket's own
   * heartbeats are discord.js's (a missed ACK makes it reconnect, which the watchdog sees as a state).
   */
  async probe(): Promise<ChannelProbe> {
    const client = this.client;
    if (!client) return { ok: false, rttMs: 0, detail: `not running (${this.st.state})` };
    const t0 = performance.now();
    try {
      await client.rest.get(Routes.user());
      const rttMs = Math.round(performance.now() - t0);
      const ok = this.st.state === "connected";
      return {
        ok,
        rttMs,
        detail: ok
          ? `GET /users/@me answered; gateway ping ${client.ws.ping} ms`
          : `REST answers but the gateway is ${this.st.state}${this.st.detail ? `: ${this.st.detail}` : ""}`,
      };
    } catch (err) {
      return {
        ok: false,
        rttMs: Math.round(performance.now() - t0),
        detail: `GET /users/@me failed: ${(err as Error).message}`,
      };
    }
  }

  private async reconnect(): Promise<void> {
    await this.disconnect();
    if (this.stopping) return;
    if (!this.cfg().enabled) {
      this.setState("disabled", "channels.discord.enabled is false");
      return;
    }
    this.connect();
  }

  private connect(): void {
    const cfg = this.cfg();
    if (!cfg.token) {
      this.setState("error", "channels.discord.token is not set; the channel stays off");
      return;
    }
    const client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      partials: [Partials.Channel],
      rest: { api: cfg.api_base ?? DEFAULT_API_BASE },
      // Nothing of ours reads message caches (we handle raw dispatches); keep memory flat.
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
    });
    this.client = client;
    this.attach(client);
    this.setState("starting");
    client.login(cfg.token).catch((err: unknown) => this.onLoginFailure(client, err));
  }

  private attach(client: Client): void {
    const log = this.ctx.logger;
    // Events of a client we already replaced (hot reload) are ignored.
    client.on("raw", (packet: GatewayDispatchPayload) => {
      if (this.client !== client) return;
      // Any dispatch is a sign of life; a user's message is the last message in.
      if (packet.t === "MESSAGE_CREATE" || packet.t === "INTERACTION_CREATE") this.inbound();
      else this.heard();
      this.onDispatch(packet);
    });
    client.rest.on("response", (req, res) => {
      if (this.client !== client || !res.ok) return;
      if (req.method !== "GET" && /\/messages|\/callback|\/webhooks\//.test(req.path)) this.sent();
      else this.heard();
    });
    client.on(Events.ClientReady, () => {
      if (this.client !== client) return;
      this.retryDelayMs = 1000;
      this.setState("connected");
      this.track(this.registerCommands(), "handler");
      // Previews a crash left mid-stream (once per run; the ledger forgets them after).
      this.track(this.relay.cleanupLeftovers(), "handler");
    });
    client.on(Events.ShardResume, (_id, replayed) => {
      if (this.client !== client) return;
      log.info({ channel: "discord", replayed }, "discord: gateway session resumed");
      this.setState("connected");
    });
    client.on(Events.ShardReconnecting, () => {
      if (!this.stopping && this.client === client)
        this.setState("reconnecting", "gateway connection lost; resuming");
    });
    client.on(Events.ShardDisconnect, (ev) => {
      if (this.stopping || this.client !== client) return;
      // discord.js gives up only on unrecoverable close codes (bad token, intents, ...).
      const detail =
        ev.code === 4004
          ? "invalid token (channels.discord.token): Discord refused the gateway login"
          : ev.code === 4014
            ? "the bot lacks privileged intents: enable MESSAGE CONTENT in the developer portal"
            : `gateway closed with code ${ev.code}`;
      this.setState("error", detail);
      void this.disconnect();
    });
    client.on(Events.ShardError, (err) =>
      log.warn({ channel: "discord", err: err.message }, "discord: gateway error"),
    );
    client.on(Events.Error, (err) =>
      log.warn({ channel: "discord", err: err.message }, "discord: client error"),
    );
    client.on(Events.Warn, (msg) => log.warn({ channel: "discord" }, `discord: ${msg}`));
    client.rest.on("rateLimited", (info) =>
      log.warn(
        { channel: "discord", route: info.route, retryAfterMs: info.retryAfter, global: info.global },
        "discord: rate limited; waiting",
      ),
    );
  }

  private onLoginFailure(client: Client, err: unknown): void {
    if (this.client !== client || this.stopping) return;
    const e = err as { code?: string; status?: number; message?: string };
    if (e.code === "TokenInvalid" || e.status === 401) {
      this.setState("error", "invalid token (channels.discord.token): Discord answered 401 Unauthorized");
      void this.disconnect();
      return;
    }
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, 60_000);
    this.setState(
      "reconnecting",
      `login failed: ${e.message ?? String(err)}; retrying in ${Math.round(delay / 1000)} s`,
    );
    void client.destroy().catch(() => undefined);
    this.client = undefined;
    this.retryTimer = this.ctx.clock.setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopping) this.connect();
    }, delay);
    this.retryTimer.unref?.();
  }

  private async registerCommands(): Promise<void> {
    const client = this.client;
    if (!client || !this.me) return;
    try {
      await client.rest.put(Routes.applicationCommands(this.me.appId), { body: slashCommandBodies() });
    } catch (err) {
      this.ctx.logger.warn(
        { channel: "discord", err: toChannelError(err, "registering slash commands").message },
        "discord: slash commands not registered (text commands still work)",
      );
    }
  }

  private async disconnect(): Promise<void> {
    if (this.retryTimer) this.ctx.clock.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const client = this.client;
    this.client = undefined;
    if (client) await client.destroy().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.unwatchConfig();
    await Promise.allSettled([...this.inflight]);
    await this.disconnect();
    if (this.st.state !== "error") this.setState("stopped");
  }

  // ------------------------------------------------------------------ inbound

  private onDispatch(packet: GatewayDispatchPayload): void {
    if (this.stopping) return;
    switch (packet.t) {
      case "READY":
        this.me = {
          id: packet.d.user.id,
          username: packet.d.user.username,
          appId: packet.d.application.id,
        };
        break;
      case "MESSAGE_CREATE":
        this.track(this.onMessage(packet.d), "handler");
        break;
      case "INTERACTION_CREATE":
        this.track(this.onInteraction(packet.d), "handler");
        break;
      default:
        break;
    }
  }

  private async onMessage(d: GatewayMessageCreateDispatchData): Promise<void> {
    const me = this.me;
    if (!me) return;
    const env = {
      ctx: this.ctx,
      cfg: this.cfg(),
      me,
      pairing: this.pairing,
      seen: this.seen,
      relay: this.relay,
      identities: this.identities,
      router: this.router,
      audio: this.media.audio,
    };
    const chat = await translateMessage(env, d);
    if (chat) await this.router.handle(chat);
  }

  private async onInteraction(i: APIInteraction): Promise<void> {
    const me = this.me;
    const client = this.client;
    if (!me || !client || (i.type !== 2 && i.type !== 3)) return;
    if (!this.seen.claim(`ix:${i.id}`)) return;
    const u = i.member?.user ?? i.user;
    const channelId = i.channel?.id ?? i.channel_id;
    if (!u || !channelId) return;
    const sender = { id: u.id, name: u.global_name ?? u.username };
    const callback = (body: Record<string, unknown>): Promise<unknown> =>
      client.rest.post(Routes.interactionCallback(i.id, i.token), { body, auth: false });
    const ephemeral = (content: string): Promise<unknown> =>
      callback({ type: 4, data: { content, flags: EPHEMERAL, allowed_mentions: NO_MENTIONS } });
    const cfg = this.cfg();
    const inbound: InboundChat = {
      channel: "discord",
      chatId: channelId,
      isGroup: i.guild_id !== undefined,
      sender,
      text: "",
      botUsername: me.username,
      relayChatId: interactionAddress(me.appId, i.token),
      ...(i.guild_id ? { guildId: i.guild_id } : {}),
    };
    if (i.guild_id === undefined) {
      const d = this.pairing.check("discord", cfg.dm_policy, cfg.allow_from, {
        ...sender,
        chatId: channelId,
      });
      if (d.kind === "ignore") return void (await ephemeral("This assistant is private."));
      if (d.kind !== "allow") return void (await ephemeral(pairingReply(d, sender.id)));
    } else {
      const quick = guildVerdict(cfg, i.guild_id, { id: channelId }).allowed;
      if (!quick && !guildVerdict(cfg, i.guild_id, await this.identities.identify(channelId)).allowed)
        return void (await ephemeral("I am not enabled in this channel."));
    }
    if (i.type === 2) {
      const data = i.data as { name: string; options?: { name: string; value?: unknown }[] };
      inbound.text = commandText(data.name, data.options);
      await callback({ type: 5 });
      this.adapter.registerInteraction(inbound.relayChatId ?? "", true);
    } else {
      const customId = (i.data as { custom_id?: string }).custom_id ?? "";
      // `approve:<id>:host|session`: a containment question's standing answers.
      const m = /^(approve|deny):([^\s:]+)(?::(host|session))?$/.exec(customId);
      if (!m) return void (await ephemeral("Unknown action."));
      // A stranger's press leaves the buttons in place for the owner.
      if (!this.mayApprove(sender.id)) return void (await ephemeral(NOT_AN_APPROVER));
      // Remove the buttons from the approval message; the decision goes out as a follow-up.
      await callback({ type: 7, data: { components: [] } });
      this.adapter.registerInteraction(inbound.relayChatId ?? "", false);
      inbound.text = `/${m[1] ?? ""} ${m[2] ?? ""}${m[3] ? ` ${m[3]}` : ""}`;
    }
    await this.router.handle(inbound);
  }

  /** Outbound, proactive delivery: `<channelId>` or `user:<userId>` (a DM channel is opened). */
  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    await this.relay.sendText(await this.runningTarget(target), text, {
      markdown: opts?.markdown ?? true,
      ...(opts?.approvalId ? { approvalId: opts.approvalId } : {}),
      ...(opts?.approvalChoices?.length ? { approvalChoices: opts.approvalChoices } : {}),
      ...(opts?.silent ? { silent: true } : {}),
    });
  }

  /** Sends a file to `<channelId>` or `user:<userId>` (size checked before the upload). */
  async sendFile(target: string, file: OutboundFile): Promise<void> {
    await this.adapter.sendFile(await this.runningTarget(target), file);
  }

  maxFileBytes(kind: OutboundFileKind): number {
    return this.adapter.maxFileBytes(kind);
  }

  /** The channel id of a proactive target, once the channel runs. */
  private async runningTarget(target: string): Promise<string> {
    if (!this.client || this.st.state === "error" || this.st.state === "stopped")
      throw new ChannelError("CHANNEL_NOT_RUNNING", `the Discord channel is not running (${this.st.state})`);
    return this.adapter.targetChannel(target);
  }
}

/** Creates the Discord channel (call `start()`; it connects in the background). */
export function createDiscordChannel(ctx: CoreContext, deps: DiscordDeps): DiscordChannel {
  return new DiscordChannel(ctx, deps);
}
