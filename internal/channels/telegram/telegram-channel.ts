/**
 * The Telegram channel (grammY, loaded lazily by the daemon when `channels.telegram.enabled`).
 *
 * Transport: long polling implemented here over `getUpdates` + offset (or a webhook when
 * `channels.telegram.webhook` is set). Every received update is stored before the offset moves
 * (UpdateStore), handled once, and marked; a restart continues with what was stored but not handled.
 * A stalled poll (`poll_stall_s`) is aborted and restarted; network errors back off (1 s .. 30 s);
 * a 401 stops the channel with one clear error while the daemon keeps running.
 *
 * Hot reload: a change of `enabled`, `token` or `api_root` stops the transport and starts it again
 * with the new values (or leaves the channel "disabled"); other keys are read live on every use.
 */
import { Api, GrammyError, type Transformer } from "grammy";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import { autoRetry } from "@grammyjs/auto-retry";
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
import type { CoreContext } from "../../core/context.js";
import type { AgentHost } from "../../core/host.js";
import type { AgentSource } from "../../agent/agents.js";
import { sleep } from "../../core/clock.js";
import { PairingStore, pairingReply } from "../common/pairing.js";
import type { StreamRelay } from "../common/stream-relay.js";
import { createChatPipeline } from "../common/chat-pipeline.js";
import type { InboundChat, InboundRouter } from "../common/inbound.js";
import { CHAT_COMMANDS, type ApprovalResolver } from "../common/commands.js";
import { TelegramAdapter, toChannelError } from "./telegram-adapter.js";
import { UpdateStore } from "./update-store.js";
import { groupAllowed, isAddressed, stripMention } from "./group-gate.js";
import {
  download,
  fetchImage,
  mediaOf,
  MediaError,
  saveFile,
  type MediaDeps,
  type MediaKind,
} from "./media.js";
import { attachmentMessage } from "../../media/inbound-media.js";
import { createMediaParts, type MediaParts } from "../../media/media-parts.js";
import { startWebhook, type WebhookServer } from "./webhook.js";

export const DEFAULT_API_ROOT = "https://api.telegram.org";

/** grammY types its signals with the `abort-controller` polyfill's type; Node's is compatible. */
type GrammySignal = Parameters<Api["getMe"]>[0];
const gs = (s: AbortSignal): GrammySignal => s as unknown as GrammySignal;

export interface TelegramDeps {
  host: AgentHost;
  registry?: ChannelRegistry;
  approvals?: ApprovalResolver;
  agentSources?: readonly AgentSource[];
  /**
   * Longest 429 `retry_after` waited out before a call fails (seconds). A new message carries an
   * answer that would otherwise be lost, so it waits long (default 600); anything else (preview
   * edits, deletes) gives up after 60 and the relay falls back to a new message.
   */
  retryLimits?: { sendMaxDelayS?: number; otherMaxDelayS?: number };
  /** Transcription, speech and the voice reply switch (shared by the channels; built when absent). */
  media?: MediaParts;
}

/** The Telegram channel: a Channel plus the Service lifecycle and health. */
export class TelegramChannel implements Channel {
  readonly id = "telegram";
  readonly name = "telegram";
  readonly pairing: PairingStore;
  readonly relay: StreamRelay;
  readonly router: InboundRouter;
  private adapter: TelegramAdapter;
  private media: MediaParts;
  private api: Api | undefined;
  private me: UserFromGetMe | undefined;
  private store: UpdateStore | undefined;
  private st: ChannelStatus;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private inflight = new Set<Promise<unknown>>();
  private webhook: WebhookServer | undefined;
  private processing: Promise<void> = Promise.resolve();
  private stopping = false;
  /** Set by `stop`: the channel never reconnects after it (a reload in flight included). */
  private closed = false;
  private unsubscribe: (() => void) | undefined;
  private lifecycle: Promise<void> = Promise.resolve();

  constructor(
    private ctx: CoreContext,
    private deps: TelegramDeps,
  ) {
    this.st = { state: "stopped", since: ctx.clock.now() };
    this.pairing = new PairingStore(ctx.db, ctx.clock);
    this.media = deps.media ?? createMediaParts(ctx);
    this.adapter = new TelegramAdapter(() => this.requireApi(), ctx.clock);
    ({ relay: this.relay, router: this.router } = createChatPipeline(ctx, "telegram", this.adapter, {
      host: deps.host,
      ...(deps.registry ? { registry: deps.registry } : {}),
      ...(deps.approvals ? { approvals: deps.approvals } : {}),
      ...(deps.agentSources ? { agentSources: deps.agentSources } : {}),
      mayApprove: (id) => this.mayApprove(id),
      media: this.media,
      stream: () => this.cfg().stream,
    }));
  }

  /** Allowed users decide approvals (in groups anyone may type `/approve`). */
  private mayApprove(userId: string): boolean {
    const cfg = this.cfg();
    return cfg.dm_policy === "open" || this.pairing.isAllowed("telegram", userId, cfg.allow_from);
  }

  private cfg(): ReturnType<CoreContext["config"]>["channels"]["telegram"] {
    return this.ctx.config().channels.telegram;
  }

  private requireApi(): Api {
    if (!this.api) throw new ChannelError("CHANNEL_NOT_RUNNING", "the Telegram channel is not running");
    return this.api;
  }

  private setState(state: ChannelState, detail?: string): void {
    this.st = {
      state,
      since: this.ctx.clock.now(),
      ...(detail ? { detail } : {}),
      ...(this.me ? { identity: `@${this.me.username}` } : {}),
    };
  }

  status(): ChannelStatus {
    return this.st;
  }

  /** Service health (for the daemon's service list). */
  health(): { state: "ok" | "starting" | "degraded" | "error" | "disabled"; detail?: string } {
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

  /** Starts in the background: never throws for a bad token or an unreachable Telegram. */
  async start(): Promise<void> {
    this.closed = false;
    this.unsubscribe ??= this.ctx.onConfig((next, prev) => {
      const a = next.channels.telegram;
      const b = prev.channels.telegram;
      if (a.enabled !== b.enabled || a.token !== b.token || a.api_root !== b.api_root) {
        // Serialised: two quick reloads never leave two poll loops running.
        this.lifecycle = this.lifecycle
          .then(() => this.reconfigure())
          .catch((err: unknown) => {
            this.ctx.logger.error({ err: (err as Error).message }, "telegram: reconfiguration failed");
          });
      }
    });
    if (this.cfg().enabled) this.connect();
    else this.setState("disabled", "channels.telegram.enabled is false");
  }

  /** Stops the transport and connects again with the live config (or stays off when disabled). */
  private async reconfigure(): Promise<void> {
    await this.disconnect();
    if (this.closed) return;
    // The token may name another bot: identify again (its offset and updates are its own).
    this.me = undefined;
    this.store = undefined;
    if (!this.cfg().enabled) {
      this.setState("disabled", "channels.telegram.enabled is false");
      this.ctx.logger.info("telegram: disabled by a config reload");
      return;
    }
    this.ctx.logger.info("telegram: reconnecting with the reloaded config");
    this.connect();
  }

  /** Ends polling / the webhook and the update processing; replies in flight keep going. */
  private async disconnect(): Promise<void> {
    this.stopping = true;
    this.abort.abort(new Error("telegram channel stopping"));
    await this.loop?.catch(() => undefined);
    this.loop = undefined;
    await this.webhook?.close();
    this.webhook = undefined;
    await this.processing.catch(() => undefined);
  }

  private connect(): void {
    const cfg = this.cfg();
    if (!cfg.token) {
      this.setState("error", "channels.telegram.token is not set");
      this.ctx.logger.error("telegram: channels.telegram.token is not set; the channel stays off");
      return;
    }
    this.stopping = false;
    this.abort = new AbortController();
    const apiRoot = cfg.api_root ?? DEFAULT_API_ROOT;
    const api = new Api(cfg.token, { apiRoot });
    const limits = this.deps.retryLimits ?? {};
    const sendRetry = autoRetry({
      maxRetryAttempts: 5,
      maxDelaySeconds: limits.sendMaxDelayS ?? 600,
      rethrowHttpErrors: true,
    });
    const retry = autoRetry({
      maxRetryAttempts: 5,
      maxDelaySeconds: limits.otherMaxDelayS ?? 60,
      rethrowHttpErrors: true,
    });
    // getUpdates is retried by the poll loop itself (with stall detection), not by auto-retry.
    const transformer: Transformer = (prev, method, payload, signal) =>
      method === "getUpdates"
        ? prev(method, payload, signal)
        : method === "sendMessage"
          ? sendRetry(prev, method, payload, signal)
          : retry(prev, method, payload, signal);
    api.config.use(transformer);
    this.api = api;
    this.setState("starting");
    this.loop = this.run(api, cfg.token, apiRoot).catch((err: unknown) => {
      this.setState("error", (err as Error).message);
      this.ctx.logger.error({ err: (err as Error).message }, "telegram: channel stopped");
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.lifecycle;
    await this.disconnect();
    // Let replies in flight finish, within the shutdown budget.
    const budget = this.ctx.config().shutdown_timeout_s * 1000;
    await Promise.race([
      Promise.allSettled([...this.inflight]),
      new Promise<void>((r) => {
        const t = setTimeout(r, budget);
        t.unref();
      }),
    ]);
    this.api = undefined;
    if (this.st.state !== "error") this.setState("stopped");
  }

  /** Proactive delivery to `<chatId>` or `<chatId>:<threadId>`. */
  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    const s = this.st.state;
    if (!this.api || s === "stopped" || s === "disabled" || (s === "error" && !this.me))
      throw new ChannelError(
        "CHANNEL_NOT_RUNNING",
        `the Telegram channel is not running (${this.st.detail ?? this.st.state})`,
      );
    try {
      await this.relay.sendText(target, text, {
        markdown: opts?.markdown ?? true,
        ...(opts?.approvalId ? { approvalId: opts.approvalId } : {}),
        ...(opts?.silent ? { silent: true } : {}),
      });
    } catch (err) {
      throw toChannelError(err, "send");
    }
  }

  /** Sends a file to `<chatId>` or `<chatId>:<threadId>` (size checked before the upload). */
  async sendFile(target: string, file: OutboundFile): Promise<void> {
    if (!this.api || this.st.state === "stopped" || this.st.state === "disabled")
      throw new ChannelError("CHANNEL_NOT_RUNNING", `the Telegram channel is not running (${this.st.state})`);
    await this.adapter.sendFile(target, file);
  }

  maxFileBytes(kind: OutboundFileKind): number {
    return this.adapter.maxFileBytes(kind);
  }

  // --- connection -------------------------------------------------------------------------------

  private async run(api: Api, token: string, apiRoot: string): Promise<void> {
    const signal = this.abort.signal;
    let delay = 1000;
    // Identify (retrying while unreachable; a 401 ends the channel).
    while (!this.me) {
      try {
        this.me = await api.getMe(gs(signal));
      } catch (err) {
        if (this.stopping) return;
        if (this.fatal(err)) return;
        this.setState("reconnecting", `getMe failed: ${(err as Error).message}`);
        await sleep(this.ctx.clock, delay, signal).catch(() => undefined);
        delay = Math.min(delay * 2, 30_000);
      }
    }
    if (this.stopping) return;
    // Previews a crash left mid-stream go before the resumed answers are read.
    this.track(this.relay.cleanupLeftovers());
    this.store = new UpdateStore(this.ctx.db, String(this.me.id), () => this.ctx.clock.now());
    this.store.prune(7 * 24 * 3600 * 1000);
    await api
      .setMyCommands(
        CHAT_COMMANDS.map((c) => ({ command: c.name, description: c.description })),
        {},
        gs(signal),
      )
      .catch((err: unknown) =>
        this.ctx.logger.warn({ err: (err as Error).message }, "telegram: setMyCommands failed"),
      );
    // Updates stored before a restart but not handled yet come first.
    this.kick(api, token, apiRoot);
    const webhook = this.cfg().webhook;
    if (webhook) {
      this.webhook = await startWebhook(
        webhook,
        (u) => this.accept(api, token, apiRoot, [u]),
        this.ctx.logger,
      );
      await api.setWebhook(webhook.url, { secret_token: webhook.secret }, gs(signal));
      this.setState("connected", `webhook ${webhook.url}`);
      return;
    }
    await api.deleteWebhook({}, gs(signal)).catch(() => undefined);
    this.setState("connected", "long polling");
    await this.poll(api, token, apiRoot);
  }

  /** True (and the channel is stopped with one clear error) when the failure is permanent. */
  private fatal(err: unknown): boolean {
    if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404)) {
      const msg = `Telegram rejected the bot token (${err.error_code} ${err.description}); check channels.telegram.token`;
      this.setState("error", msg);
      this.ctx.logger.error(msg);
      return true;
    }
    return false;
  }

  private async poll(api: Api, token: string, apiRoot: string): Promise<void> {
    const signal = this.abort.signal;
    let delay = 1000;
    while (!this.stopping) {
      const stallS = this.cfg().poll_stall_s;
      const timeout = Math.max(1, Math.min(25, stallS - 3));
      const req = new AbortController();
      const onStop = (): void => req.abort(signal.reason);
      signal.addEventListener("abort", onStop, { once: true });
      let stalled = false;
      const watchdog = this.ctx.clock.setTimeout(() => {
        stalled = true;
        req.abort(new Error("poll stalled"));
      }, stallS * 1000);
      watchdog.unref?.();
      try {
        const updates = await api.getUpdates(
          { offset: this.store?.offset() ?? 0, timeout, limit: 100 },
          gs(req.signal),
        );
        if (this.st.state !== "connected") this.setState("connected", "long polling");
        delay = 1000;
        this.accept(api, token, apiRoot, updates);
      } catch (err) {
        if (this.stopping) break;
        if (this.fatal(err)) return;
        if (stalled) {
          this.ctx.logger.warn(`telegram: no answer to getUpdates for ${stallS}s; restarting the poll`);
          this.setState("reconnecting", "poll stalled; restarted");
          continue;
        }
        const msg =
          err instanceof GrammyError ? `${err.error_code} ${err.description}` : (err as Error).message;
        this.setState("reconnecting", `getUpdates failed: ${msg}`);
        this.ctx.logger.warn({ err: msg, retryInMs: delay }, "telegram: polling failed; backing off");
        const retryAfter = err instanceof GrammyError ? err.parameters.retry_after : undefined;
        await sleep(this.ctx.clock, retryAfter ? retryAfter * 1000 : delay, signal).catch(() => undefined);
        delay = Math.min(delay * 2, 30_000);
      } finally {
        this.ctx.clock.clearTimeout(watchdog);
        signal.removeEventListener("abort", onStop);
      }
    }
  }

  /** Stores updates (advancing the offset) and schedules their handling. */
  private accept(api: Api, token: string, apiRoot: string, updates: readonly Update[]): void {
    if (!this.store) return;
    this.store.receive(updates);
    this.kick(api, token, apiRoot);
  }

  /** Handles stored, unhandled updates in order, one at a time (submission order = arrival order). */
  private kick(api: Api, token: string, apiRoot: string): void {
    this.processing = this.processing.then(async () => {
      const store = this.store;
      if (!store) return;
      for (const u of store.pending()) {
        if (this.stopping) return;
        try {
          await this.dispatch(api, token, apiRoot, u.payload as Update);
        } catch (err) {
          this.ctx.logger.error(
            { err: (err as Error).message, updateId: u.updateId },
            "telegram: update failed",
          );
        }
        store.markHandled(u.updateId);
      }
    });
  }

  private track(p: Promise<unknown>): void {
    const t = p.catch((err: unknown) =>
      this.ctx.logger.error({ err: (err as Error).message }, "telegram: reply failed"),
    );
    this.inflight.add(t);
    void t.finally(() => this.inflight.delete(t));
  }

  // --- inbound ----------------------------------------------------------------------------------

  private async dispatch(api: Api, token: string, apiRoot: string, u: Update): Promise<void> {
    const me = this.me;
    if (!me) return;
    if (u.callback_query) return this.onCallback(api, u.callback_query);
    const m = u.message;
    if (!m || !m.from || m.from.is_bot) return;
    const cfg = this.cfg();
    const chatId = String(m.chat.id);
    const isGroup = m.chat.type === "group" || m.chat.type === "supergroup";
    const senderName = [m.from.first_name, m.from.last_name].filter(Boolean).join(" ") || m.from.username;
    const sender = { id: String(m.from.id), ...(senderName ? { name: senderName } : {}) };
    let text = m.text ?? m.caption ?? "";
    if (isGroup) {
      if (!groupAllowed(cfg, m.chat.id)) return;
      if (!isAddressed(cfg, { id: me.id, username: me.username }, m, text)) return;
      text = stripMention(text, me.username);
    } else if (m.chat.type === "private") {
      const d = this.pairing.check("telegram", cfg.dm_policy, cfg.allow_from, { ...sender, chatId });
      if (d.kind === "ignore") return;
      if (d.kind === "pair" || d.kind === "pair_full") {
        const reply = pairingReply(d, sender.id);
        if (d.kind === "pair" && d.fresh) await this.relay.sendText(chatId, reply, { markdown: false });
        else await this.relay.errorReply(chatId, "pairing", reply);
        return;
      }
    } else return;
    const threadId =
      m.is_topic_message && m.message_thread_id !== undefined ? String(m.message_thread_id) : undefined;
    const relayChatId = threadId ? `${chatId}:${threadId}` : chatId;
    const chat: InboundChat = {
      channel: "telegram",
      chatId,
      ...(threadId ? { threadId } : {}),
      isGroup,
      sender,
      text,
      relayChatId,
      botUsername: me.username,
      originLabel: isGroup
        ? `Telegram group "${"title" in m.chat ? m.chat.title : chatId}" (from ${senderName ?? sender.id})`
        : `Telegram DM from ${senderName ?? sender.id}`,
    };
    const media = mediaOf(m);
    if (media.kind !== "none") {
      const mdeps: MediaDeps = {
        api,
        apiRoot,
        token,
        maxImageBytes: cfg.media.max_image_bytes,
        signal: this.abort.signal,
      };
      try {
        const handled = media.kind === "file" ? await this.attachment(chat, mdeps, media) : undefined;
        if (handled === "reply") return;
        if (handled === "text") {
          /* the transcript or document text is the message now */
        } else if (media.kind === "image") chat.images = [await fetchImage(mdeps, media)];
        else if (cfg.media.save) {
          const rel = await saveFile(mdeps, this.ctx.config().workspace, media, this.ctx.clock.now());
          chat.text =
            `${text}\n\n[The user sent a file, saved in the workspace at ${rel}${media.mime ? ` (${media.mime})` : ""}]`.trim();
        } else {
          await this.relay.sendText(
            relayChatId,
            `${media.label} are not supported yet. Please send text or a photo.`,
            { markdown: false },
          );
          return;
        }
      } catch (err) {
        const msg = err instanceof MediaError ? err.message : "I could not download that file from Telegram.";
        this.ctx.logger.warn({ err: (err as Error).message }, "telegram: media download failed");
        await this.relay.sendText(relayChatId, msg, { markdown: false }).catch(() => undefined);
        return;
      }
    }
    if (!chat.text.trim() && !chat.images?.length) return;
    // `handle` submits synchronously (the user message is committed) before its first await.
    this.track(this.router.handle(chat));
  }

  /**
   * Voice notes, audio and readable documents through the media module: `text` = the message now
   * carries the transcript/text, `reply` = the user got a refusal, undefined = not ours.
   */
  private async attachment(
    chat: InboundChat,
    mdeps: MediaDeps,
    media: Extract<MediaKind, { kind: "file" }>,
  ): Promise<"text" | "reply" | undefined> {
    if (media.role === "other") return undefined;
    const addr = chat.relayChatId ?? chat.chatId;
    const agentId = this.router.agentFor(chat);
    const out = await attachmentMessage(
      {
        kind: media.role,
        name: media.name,
        uniqueId: media.fileUniqueId,
        ...(media.mime ? { mime: media.mime } : {}),
        ...(media.size !== undefined ? { size: media.size } : {}),
        ...(media.durationS !== undefined ? { durationS: media.durationS } : {}),
        download: (max) => download(mdeps, media.fileId, max),
      },
      chat.text,
      {
        config: () => this.ctx.config(),
        audio: this.media.audio,
        clock: this.ctx.clock,
        channel: "telegram",
        typing: () => void this.adapter.typing(addr),
      },
      { agentId, sessionKey: this.router.sessionKey(chat, agentId) },
    );
    if (!out) return undefined;
    if ("reply" in out) {
      await this.relay.sendText(addr, out.reply, { markdown: false }).catch(() => undefined);
      return "reply";
    }
    chat.text = out.text;
    return "text";
  }

  private async onCallback(api: Api, q: NonNullable<Update["callback_query"]>): Promise<void> {
    const data = q.data ?? "";
    const m = /^(approve|deny):(.+)$/.exec(data);
    const userId = String(q.from.id);
    const allowed = this.mayApprove(userId);
    if (!m || !allowed) {
      await api
        .answerCallbackQuery(q.id, { text: allowed ? "Unknown action" : "Not allowed" })
        .catch(() => undefined);
      return;
    }
    const msg = q.message as Message | undefined;
    const chatId = String(msg?.chat.id ?? q.from.id);
    const isGroup = msg?.chat.type === "group" || msg?.chat.type === "supergroup";
    // The decision's reply goes to the topic the buttons are in.
    const threadId =
      msg?.is_topic_message && msg.message_thread_id !== undefined
        ? String(msg.message_thread_id)
        : undefined;
    const p = this.router.handle({
      channel: "telegram",
      chatId,
      ...(threadId ? { threadId, relayChatId: `${chatId}:${threadId}` } : {}),
      isGroup,
      sender: { id: userId, name: q.from.first_name },
      text: `/${m[1]} ${m[2]}`,
    });
    this.track(
      p.then((out) =>
        api
          .answerCallbackQuery(q.id, { text: out.kind === "command" ? out.reply.slice(0, 190) : "" })
          .catch(() => undefined),
      ),
    );
  }
}

/** Creates the Telegram channel (call `start()`; it connects in the background). */
export function createTelegramChannel(ctx: CoreContext, deps: TelegramDeps): TelegramChannel {
  return new TelegramChannel(ctx, deps);
}
