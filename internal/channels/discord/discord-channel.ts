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
 * Over 300 lines on purpose: the transport (gateway client events, reconnects, dispatch) of one
 * platform; lifecycle is in chat-channel-base.ts, message translation in discord-inbound.ts,
 * interactions in discord-interaction.ts, the client's build in discord-client.ts, the probe in
 * discord-probe.ts.
 */
import {
  Client,
  Events,
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
import { ChannelError } from "../channel.js";
import type { CoreContext } from "../../runtime/context.js";
import type { TimerHandle } from "../../core/clock.js";
import type { StreamRelay } from "../common/stream-relay.js";
import { createChatPipeline } from "../common/chat-pipeline.js";
import { ApprovalMessages } from "../common/approval-messages.js";
import { isChannelOwner, ownerChatTarget, privateContextAllowed } from "../../config/channel-owner.js";
import { ChatChannelBase, type ChatChannelDeps } from "../common/chat-channel-base.js";
import { ChannelIdentities } from "./channel-identities.js";
import { translateMessage } from "./discord-inbound.js";
import type { InboundRouter } from "../../inbound/chat-router.js";
import { DISCORD_LIMITS } from "../common/chunking.js";
import { DiscordAdapter, toChannelError } from "./discord-adapter.js";
import { handleInteraction } from "./discord-interaction.js";
import { createDiscordClient, gatewayCloseDetail } from "./discord-client.js";
import { probeDiscord } from "./discord-probe.js";
import { SeenStore } from "./seen-store.js";
import { slashCommandBodies } from "./slash-commands.js";

export { DEFAULT_API_BASE } from "./discord-client.js";

export type DiscordDeps = ChatChannelDeps;

/** The Discord channel: a Channel plus the Service lifecycle and health. */
export class DiscordChannel extends ChatChannelBase implements Channel {
  readonly id = "discord";
  readonly name = "discord";
  readonly relay: StreamRelay;
  readonly router: InboundRouter;
  readonly adapter: DiscordAdapter;
  private seen: SeenStore;
  private client: Client | undefined;
  private me: { id: string; username: string; appId: string } | undefined;
  private identities: ChannelIdentities;
  private questions: ApprovalMessages;
  private retryTimer: TimerHandle | undefined;
  private retryDelayMs = 1000;
  private stopping = false;
  private readyWaiters: (() => void)[] = [];

  constructor(
    ctx: CoreContext,
    private deps: DiscordDeps,
  ) {
    super(ctx, "discord", deps.media, (id) => `user:${id}`);
    this.identities = new ChannelIdentities(() => this.requireClient(), ctx.logger);
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
      mayApprove: (id) => this.isOwner(id),
      isOwner: (id) => this.isOwner(id),
      ownerTarget: () => ownerChatTarget(ctx.config(), "discord"),
      privateAllowed: (chatId) => privateContextAllowed(ctx.config(), "discord", chatId),
      media: this.media,
      stream: () => this.cfg().stream,
    }));
    this.questions = new ApprovalMessages(this.relay, this.adapter, ctx.logger);
  }

  /**
   * The owner (config/channel-owner.ts): `owner`, else `allow_from` of config.yaml, never the pairing
   * store. Only the owner answers questions; anyone else taints the session they write into.
   */
  private isOwner(userId: string): boolean {
    return isChannelOwner(this.ctx.config(), "discord", userId);
  }

  /** Closes a question this channel sent (buttons edited away, `note` added). */
  async closeApproval(approvalId: string, note: string): Promise<boolean> {
    return this.questions.close(approvalId, note);
  }

  /** "Show all": the whole question, to the presser's DM (never the guild channel). */
  private async showAll(approvalId: string, userId: string): Promise<string> {
    const show = (id: string) => this.deps.approvals?.show?.(id);
    return this.questions.showWhole(show, approvalId, await this.runningTarget(`user:${userId}`), "your DMs");
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

  /** A REST round trip (GET /users/@me; discord-probe.ts) while the client runs. */
  async probe(): Promise<ChannelProbe> {
    const client = this.client;
    if (!client) return { ok: false, rttMs: 0, detail: `not running (${this.st.state})` };
    return probeDiscord(client, this.st);
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
    const client = createDiscordClient(cfg);
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
      this.setState("error", gatewayCloseDetail(ev.code));
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
    if (!me || !client) return;
    const env = {
      cfg: this.cfg(),
      me,
      rest: client.rest,
      pairing: this.pairing,
      seen: this.seen,
      identities: this.identities,
      adapter: this.adapter,
      router: this.router,
      mayApprove: (id: string) => this.isOwner(id),
      showAll: (approvalId: string, userId: string) => this.showAll(approvalId, userId),
    };
    await handleInteraction(env, i);
  }

  /** Outbound, proactive delivery: `<channelId>` or `user:<userId>` (a DM channel is opened). */
  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    const addr = await this.runningTarget(target);
    const o = {
      markdown: opts?.markdown ?? true,
      ...(opts?.approvalChoices?.length ? { approvalChoices: opts.approvalChoices } : {}),
      ...(opts?.approvalHash ? { approvalHash: opts.approvalHash } : {}),
      ...(opts?.approvalShowAll ? { approvalShowAll: true } : {}),
      ...(opts?.silent ? { silent: true } : {}),
    };
    if (opts?.approvalId) await this.questions.send(addr, text, { ...o, approvalId: opts.approvalId });
    else await this.relay.sendText(addr, text, o);
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
