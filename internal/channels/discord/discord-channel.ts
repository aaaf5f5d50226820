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
  ChannelState,
  ChannelStatus,
  OutboundFile,
  OutboundFileKind,
  SendOptions,
} from "../channel.js";
import { ChannelError } from "../channel.js";
import type { ChannelRegistry } from "../registry.js";
import type { CoreContext, ServiceHealth } from "../../core/context.js";
import type { AgentHost } from "../../core/host.js";
import type { AgentSource } from "../../agent/agents.js";
import type { TimerHandle } from "../../core/clock.js";
import { PairingStore, pairingReply } from "../common/pairing.js";
import type { StreamRelay } from "../common/stream-relay.js";
import { createChatPipeline } from "../common/chat-pipeline.js";
import { NOT_AN_APPROVER, type InboundChat, type InboundRouter } from "../common/inbound.js";
import type { ApprovalResolver } from "../common/commands.js";
import { DISCORD_LIMITS } from "../common/chunking.js";
import { DiscordAdapter, interactionAddress, NO_MENTIONS, toChannelError } from "./discord-adapter.js";
import { SeenStore } from "./seen-store.js";
import { guildVerdict, isAddressed, stripBotMention, type ChannelIdentity } from "./guild-gate.js";
import { commandText, slashCommandBodies } from "./slash-commands.js";
import { discordAttachment, IS_VOICE_MESSAGE } from "./attachments.js";
import { createMediaParts, type MediaParts } from "../../media/media-parts.js";

export const DEFAULT_API_BASE = "https://discord.com/api";
const THREAD_TYPES = new Set([10, 11, 12]);
const EPHEMERAL = 1 << 6;

type DiscordConfig = ReturnType<CoreContext["config"]>["channels"]["discord"];

export interface DiscordDeps {
  host: AgentHost;
  registry?: ChannelRegistry;
  approvals?: ApprovalResolver;
  agentSources?: readonly AgentSource[];
  /** Transcription, speech and the voice reply switch (shared by the channels; built when absent). */
  media?: MediaParts;
}

/** The Discord channel: a Channel plus the Service lifecycle and health. */
export class DiscordChannel implements Channel {
  readonly id = "discord";
  readonly name = "discord";
  readonly pairing: PairingStore;
  readonly relay: StreamRelay;
  readonly router: InboundRouter;
  readonly adapter: DiscordAdapter;
  private media: MediaParts;
  private seen: SeenStore;
  private client: Client | undefined;
  private me: { id: string; username: string; appId: string } | undefined;
  private st: ChannelStatus;
  private inflight = new Set<Promise<unknown>>();
  private dmChannels = new Map<string, string>();
  private identities = new Map<string, Promise<ChannelIdentity>>();
  private retryTimer: TimerHandle | undefined;
  private retryDelayMs = 1000;
  private stopping = false;
  private readyWaiters: (() => void)[] = [];
  private unsubscribe: (() => void) | undefined;
  private lifecycle: Promise<void> = Promise.resolve();

  constructor(
    private ctx: CoreContext,
    private deps: DiscordDeps,
  ) {
    this.st = { state: "stopped", since: ctx.clock.now() };
    this.pairing = new PairingStore(ctx.db, ctx.clock);
    this.seen = new SeenStore(ctx.db, () => ctx.clock.now());
    this.media = deps.media ?? createMediaParts(ctx);
    this.adapter = new DiscordAdapter(
      () => this.requireClient().rest,
      () => ({ ...DISCORD_LIMITS, maxLines: this.cfg().max_lines_per_message }),
      () => ctx.clock.now(),
    );
    ({ relay: this.relay, router: this.router } = createChatPipeline(ctx, "discord", this.adapter, {
      host: deps.host,
      ...(deps.registry ? { registry: deps.registry } : {}),
      ...(deps.approvals ? { approvals: deps.approvals } : {}),
      ...(deps.agentSources ? { agentSources: deps.agentSources } : {}),
      mayApprove: (id) => this.mayApprove(id),
      media: this.media,
      stream: () => this.cfg().stream,
    }));
  }

  /** Allowed users decide approvals (in a guild channel anyone may press a button or type `/approve`). */
  private mayApprove(userId: string): boolean {
    const cfg = this.cfg();
    return cfg.dm_policy === "open" || this.pairing.isAllowed("discord", userId, cfg.allow_from);
  }

  private cfg(): DiscordConfig {
    return this.ctx.config().channels.discord;
  }

  private requireClient(): Client {
    if (!this.client) throw new ChannelError("CHANNEL_NOT_RUNNING", "the Discord channel is not running");
    return this.client;
  }

  private setState(state: ChannelState, detail?: string): void {
    const prev = this.st.state;
    this.st = {
      state,
      since: this.ctx.clock.now(),
      ...(detail ? { detail } : {}),
      ...(this.me ? { identity: `@${this.me.username}` } : {}),
    };
    if (prev !== state) {
      const log = { channel: "discord", from: prev, to: state, ...(detail ? { detail } : {}) };
      if (state === "error") this.ctx.logger.error(log, `discord: ${detail ?? "error"}`);
      else this.ctx.logger.info(log, `discord: ${state}`);
    }
    if (state === "connected") for (const w of this.readyWaiters.splice(0)) w();
  }

  status(): ChannelStatus {
    return this.st;
  }

  /** Service health (for the daemon's service list). */
  health(): ServiceHealth {
    const s = this.st.state;
    const state =
      s === "connected"
        ? "ok"
        : s === "starting"
          ? "starting"
          : s === "error"
            ? "error"
            : s === "disabled"
              ? "disabled"
              : "degraded";
    return { state, ...(this.st.detail ? { detail: this.st.detail } : {}) };
  }

  /** Resolves once the gateway is connected (READY or RESUMED). */
  whenConnected(): Promise<void> {
    if (this.st.state === "connected") return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** Connects in the background: never throws for a bad token or an unreachable Discord. */
  async start(): Promise<void> {
    this.unsubscribe ??= this.ctx.onConfig((next, prev) => {
      const a = next.channels.discord;
      const b = prev.channels.discord;
      if (a.enabled !== b.enabled || a.token !== b.token || a.api_base !== b.api_base) {
        // Serialised: two quick reloads never leave two clients connected.
        this.lifecycle = this.lifecycle.then(() => this.restart()).catch(() => undefined);
      }
    });
    this.stopping = false;
    this.connect();
  }

  private async restart(): Promise<void> {
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
      if (this.client === client) this.onDispatch(packet);
    });
    client.on(Events.ClientReady, () => {
      if (this.client !== client) return;
      this.retryDelayMs = 1000;
      this.setState("connected");
      this.track(this.registerCommands());
      // Previews a crash left mid-stream (once per run; the ledger forgets them after).
      this.track(this.relay.cleanupLeftovers());
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
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.lifecycle;
    await Promise.allSettled([...this.inflight]);
    await this.disconnect();
    if (this.st.state !== "error") this.setState("stopped");
  }

  private track(p: Promise<unknown>): void {
    const t = p.catch((err: unknown) => {
      this.ctx.logger.error({ channel: "discord", err: (err as Error).message }, "discord: handler failed");
    });
    this.inflight.add(t);
    void t.finally(() => this.inflight.delete(t));
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
        this.track(this.onMessage(packet.d));
        break;
      case "INTERACTION_CREATE":
        this.track(this.onInteraction(packet.d));
        break;
      default:
        break;
    }
  }

  private async onMessage(d: GatewayMessageCreateDispatchData): Promise<void> {
    const me = this.me;
    if (!me || d.author.bot || d.author.id === me.id || d.webhook_id) return;
    if (d.type !== 0 && d.type !== 19) return;
    const cfg = this.cfg();
    const sender = { id: d.author.id, name: d.author.global_name ?? d.author.username };
    let text = d.content;
    const base: Omit<InboundChat, "text"> = {
      channel: "discord",
      chatId: d.channel_id,
      isGroup: d.guild_id !== undefined,
      sender,
      botUsername: me.username,
    };
    if (d.guild_id === undefined) {
      const decision = this.pairing.check("discord", cfg.dm_policy, cfg.allow_from, {
        ...sender,
        chatId: d.channel_id,
      });
      if (decision.kind === "ignore") return;
      if (decision.kind !== "allow") {
        if (!this.seen.claim(d.id)) return;
        await this.relay.errorReply(d.channel_id, "pairing", pairingReply(decision, sender.id));
        return;
      }
      base.originLabel = `Discord DM from ${sender.name}`;
    } else {
      // Cheap checks first: unlisted guilds and unaddressed chatter never cost a REST lookup.
      const quick = guildVerdict(cfg, d.guild_id, { id: d.channel_id });
      if (!cfg.guilds[d.guild_id] && !cfg.guilds["*"]) return;
      if (quick.requireMention && !isAddressed(d, me.id)) return;
      const ident = quick.allowed ? { id: d.channel_id } : await this.identify(d.channel_id);
      if (!quick.allowed && !guildVerdict(cfg, d.guild_id, ident).allowed) return;
      text = stripBotMention(text, me.id);
      base.guildId = d.guild_id;
      const where = ident.names?.[0] ? `#${ident.names[0]}` : `channel ${d.channel_id}`;
      base.originLabel = `Discord ${where} from ${sender.name}`;
    }
    const att = d.attachments[0];
    if (att) {
      // Claimed before the download and transcription: a replay never costs a second call.
      if (!this.seen.claim(d.id)) return;
      const out = await discordAttachment(att, { ...base, text }, this.router, {
        config: () => this.ctx.config(),
        audio: this.media.audio,
        clock: this.ctx.clock,
        channel: "discord",
        typing: () => void this.adapter.typing(d.channel_id).catch(() => undefined),
        voiceFlag: ((d.flags ?? 0) & IS_VOICE_MESSAGE) !== 0,
      });
      if ("reply" in out) {
        await this.relay.sendText(d.channel_id, out.reply, { markdown: false }).catch(() => undefined);
        return;
      }
      await this.router.handle({ ...base, text: out.text });
      return;
    }
    if (!text.trim()) return;
    // Claimed before answering: a replay (after RESUME or a restart) is never answered twice.
    if (!this.seen.claim(d.id)) {
      this.ctx.logger.debug({ channel: "discord", id: d.id }, "discord: duplicate message ignored");
      return;
    }
    await this.router.handle({ ...base, text });
  }

  /**
   * What the allow list matches for a channel: id, thread parent, names. The lookup promise is cached
   * so messages of one channel keep their arrival order; a failed lookup (gated as just the id) is
   * retried next time.
   */
  private identify(channelId: string): Promise<ChannelIdentity> {
    const known = this.identities.get(channelId);
    if (known) return known;
    const lookup = this.lookupIdentity(channelId).catch((err: unknown): ChannelIdentity => {
      this.identities.delete(channelId);
      this.ctx.logger.warn(
        { channel: "discord", channelId, err: (err as Error).message },
        "discord: channel lookup failed",
      );
      return { id: channelId };
    });
    if (this.identities.size > 5000) this.identities.clear();
    this.identities.set(channelId, lookup);
    return lookup;
  }

  private async lookupIdentity(channelId: string): Promise<ChannelIdentity> {
    const info = async (id: string): Promise<{ name?: string; parentId?: string }> => {
      const client = this.requireClient();
      const c = client.channels.cache.get(id);
      if (c) {
        const name = "name" in c && typeof c.name === "string" ? c.name : undefined;
        const parentId = c.isThread() ? (c.parentId ?? undefined) : undefined;
        return { ...(name ? { name } : {}), ...(parentId ? { parentId } : {}) };
      }
      const raw = (await client.rest.get(Routes.channel(id))) as {
        type: number;
        name?: string | null;
        parent_id?: string | null;
      };
      const parentId = THREAD_TYPES.has(raw.type) ? (raw.parent_id ?? undefined) : undefined;
      return { ...(raw.name ? { name: raw.name } : {}), ...(parentId ? { parentId } : {}) };
    };
    const self = await info(channelId);
    const names = self.name ? [self.name] : [];
    if (self.parentId) {
      const parent = await info(self.parentId).catch(() => ({ name: undefined }));
      if (parent.name) names.push(parent.name);
    }
    return { id: channelId, ...(self.parentId ? { parentId: self.parentId } : {}), names };
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
      if (!quick && !guildVerdict(cfg, i.guild_id, await this.identify(channelId)).allowed)
        return void (await ephemeral("I am not enabled in this channel."));
    }
    if (i.type === 2) {
      const data = i.data as { name: string; options?: { name: string; value?: unknown }[] };
      inbound.text = commandText(data.name, data.options);
      await callback({ type: 5 });
      this.adapter.registerInteraction(inbound.relayChatId ?? "", true);
    } else {
      const customId = (i.data as { custom_id?: string }).custom_id ?? "";
      const m = /^(approve|deny):(\S+)$/.exec(customId);
      if (!m) return void (await ephemeral("Unknown action."));
      // A stranger's press leaves the buttons in place for the owner.
      if (!this.mayApprove(sender.id)) return void (await ephemeral(NOT_AN_APPROVER));
      // Remove the buttons from the approval message; the decision goes out as a follow-up.
      await callback({ type: 7, data: { components: [] } });
      this.adapter.registerInteraction(inbound.relayChatId ?? "", false);
      inbound.text = `/${m[1] ?? ""} ${m[2] ?? ""}`;
    }
    await this.router.handle(inbound);
  }

  // ------------------------------------------------------------------ outbound

  /** Proactive delivery: `<channelId>` or `user:<userId>` (a DM channel is opened). */
  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    if (!this.client || this.st.state === "error" || this.st.state === "stopped")
      throw new ChannelError("CHANNEL_NOT_RUNNING", `the Discord channel is not running (${this.st.state})`);
    const channelId = await this.channelOf(target);
    await this.relay.sendText(channelId, text, {
      markdown: opts?.markdown ?? true,
      ...(opts?.approvalId ? { approvalId: opts.approvalId } : {}),
      ...(opts?.silent ? { silent: true } : {}),
    });
  }
  /** Sends a file to `<channelId>` or `user:<userId>` (size checked before the upload). */
  async sendFile(target: string, file: OutboundFile): Promise<void> {
    if (!this.client || this.st.state === "error" || this.st.state === "stopped")
      throw new ChannelError("CHANNEL_NOT_RUNNING", `the Discord channel is not running (${this.st.state})`);
    await this.adapter.sendFile(await this.channelOf(target), file);
  }

  maxFileBytes(kind: OutboundFileKind): number {
    return this.adapter.maxFileBytes(kind);
  }

  /** The channel id of a target: itself, or the DM channel of `user:<id>`. */
  private async channelOf(target: string): Promise<string> {
    const user = /^user:(\d+)$/.exec(target);
    if (user) {
      const uid = user[1] ?? "";
      const channelId = this.dmChannels.get(uid) ?? (await this.adapter.openDm(uid));
      this.dmChannels.set(uid, channelId);
      return channelId;
    }
    if (!/^\d+$/.test(target))
      throw new ChannelError(
        "CHANNEL_UNKNOWN_TARGET",
        `invalid Discord target "discord:${target}" (expected discord:<channelId> or discord:user:<userId>)`,
      );
    return target;
  }
}

/** Creates the Discord channel (call `start()`; it connects in the background). */
export function createDiscordChannel(ctx: CoreContext, deps: DiscordDeps): DiscordChannel {
  return new DiscordChannel(ctx, deps);
}
