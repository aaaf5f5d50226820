/**
 * The Telegram channel (grammY, loaded lazily by the daemon when `channels.telegram.enabled`).
 *
 * Transport: long polling over `getUpdates` + offset (telegram-poller.ts; or a webhook when
 * `channels.telegram.webhook` is set). Every received update is stored before the offset moves
 * (UpdateStore), handled once, and marked; a restart continues with what was stored but not handled.
 * A stalled poll (`poll_stall_s`) is aborted and restarted; network errors back off (1 s .. 30 s);
 * a 401 stops the channel with one clear error while the daemon keeps running.
 *
 * Hot reload: a change of `enabled`, `token` or `api_root` stops the transport and starts it again
 * with the new values (or leaves the channel "disabled"); other keys are read live on every use.
 *
 * Over 300 lines on purpose: the transport (connect, identify, webhook, update store) of one
 * platform; lifecycle is in chat-channel-base.ts, translation in telegram-inbound.ts, the grammY
 * Api and its retries in telegram-api.ts, the poll loop in telegram-poller.ts, the probe in
 * telegram-probe.ts.
 */
import { GrammyError, type Api } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import type { Channel, ChannelProbe, OutboundFile, OutboundFileKind, SendOptions } from "../channel.js";
import { ChannelError } from "../channel.js";
import type { CoreContext } from "../../runtime/context.js";
import { sleep } from "../../core/clock.js";
import type { StreamRelay } from "../common/stream-relay.js";
import { createChatPipeline } from "../common/chat-pipeline.js";
import { ApprovalMessages } from "../common/approval-messages.js";
import { isChannelOwner, ownerChatTarget, privateContextAllowed } from "../../config/channel-owner.js";
import { ChatChannelBase, type ChatChannelDeps } from "../common/chat-channel-base.js";
import type { InboundRouter } from "../../inbound/chat-router.js";
import { CHAT_COMMANDS } from "../../inbound/commands.js";
import { TelegramAdapter, toChannelError } from "./telegram-adapter.js";
import { UpdateStore } from "./update-store.js";
import { startWebhook, type WebhookServer } from "./webhook.js";
import { approvalButton, translateMessage } from "./telegram-inbound.js";
import { createTelegramApi, DEFAULT_API_ROOT, gs, type RetryLimits } from "./telegram-api.js";
import { pollUpdates } from "./telegram-poller.js";
import { probeTelegram } from "./telegram-probe.js";

export { DEFAULT_API_ROOT } from "./telegram-api.js";

export interface TelegramDeps extends ChatChannelDeps {
  /**
   * Longest 429 `retry_after` waited out before a call fails (seconds). A new message carries an
   * answer that would otherwise be lost, so it waits long (default 600); anything else (preview
   * edits, deletes) gives up after 60 and the relay falls back to a new message.
   */
  retryLimits?: RetryLimits;
}

/** The Telegram channel: a Channel plus the Service lifecycle and health. */
export class TelegramChannel extends ChatChannelBase implements Channel {
  readonly id = "telegram";
  readonly name = "telegram";
  readonly relay: StreamRelay;
  readonly router: InboundRouter;
  private adapter: TelegramAdapter;
  private questions: ApprovalMessages;
  private api: Api | undefined;
  private me: UserFromGetMe | undefined;
  private store: UpdateStore | undefined;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private webhook: WebhookServer | undefined;
  private processing: Promise<void> = Promise.resolve();
  private stopping = false;
  /** Set by `stop`: the channel never reconnects after it (a reload in flight included). */
  private closed = false;
  /** Updates received by polling (the probe compares it across probes). */
  private received = 0;
  private lastProbe: { pending: number; received: number } | undefined;

  constructor(
    ctx: CoreContext,
    private deps: TelegramDeps,
  ) {
    super(ctx, "telegram", deps.media);
    this.adapter = new TelegramAdapter(() => this.requireApi(), ctx.clock);
    ({ relay: this.relay, router: this.router } = createChatPipeline(ctx, "telegram", this.adapter, {
      ...(deps.desk ? { desk: deps.desk } : {}),
      host: deps.host,
      ...(deps.registry ? { registry: deps.registry } : {}),
      ...(deps.approvals ? { approvals: deps.approvals } : {}),
      ...(deps.agentSources ? { agentSources: deps.agentSources } : {}),
      // The owner (config/channel-owner.ts): `owner`, else config.yaml's `allow_from`, never pairing.
      mayApprove: (id) => isChannelOwner(ctx.config(), "telegram", id),
      isOwner: (id) => isChannelOwner(ctx.config(), "telegram", id),
      ownerTarget: () => ownerChatTarget(ctx.config(), "telegram"),
      privateAllowed: (chatId) => privateContextAllowed(ctx.config(), "telegram", chatId),
      media: this.media,
      stream: () => this.cfg().stream,
    }));
    this.questions = new ApprovalMessages(this.relay, this.adapter, ctx.logger);
  }

  /** Closes a question this channel sent (buttons edited away, `note` added). */
  async closeApproval(approvalId: string, note: string): Promise<boolean> {
    return this.questions.close(approvalId, note);
  }

  /** "Show all": the whole question, to the presser's private chat (their user id is its id). */
  private showAll(approvalId: string, userId: string): Promise<string> {
    const show = (id: string) => this.deps.approvals?.show?.(id);
    return this.questions.showWhole(show, approvalId, userId, "your private chat");
  }

  private cfg(): ReturnType<CoreContext["config"]>["channels"]["telegram"] {
    return this.ctx.config().channels.telegram;
  }

  private requireApi(): Api {
    if (!this.api) throw new ChannelError("CHANNEL_NOT_RUNNING", "the Telegram channel is not running");
    return this.api;
  }

  protected identity(): string | undefined {
    return this.me ? `@${this.me.username}` : undefined;
  }

  /** Starts in the background: never throws for a bad token or an unreachable Telegram. */
  async start(): Promise<void> {
    this.closed = false;
    this.watchConfig(
      ({ channels: { telegram: a } }, { channels: { telegram: b } }) =>
        a.enabled !== b.enabled || a.token !== b.token || a.api_root !== b.api_root,
      () => this.reconfigure(),
    );
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
    const api = createTelegramApi(cfg.token, apiRoot, this.deps.retryLimits ?? {}, {
      sent: () => this.sent(),
      heard: () => this.heard(),
    });
    this.api = api;
    this.setState("starting");
    this.loop = this.run(api, cfg.token, apiRoot).catch((err: unknown) => {
      this.setState("error", (err as Error).message);
      this.ctx.logger.error({ err: (err as Error).message }, "telegram: channel stopped");
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    await this.unwatchConfig();
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

  /** Asks Telegram for the webhook info; two probes in a row decide "stuck" (telegram-probe.ts). */
  async probe(): Promise<ChannelProbe> {
    const api = this.api;
    if (!api) return { ok: false, rttMs: 0, detail: `not running (${this.st.state})` };
    const { probe, mark } = await probeTelegram(api, {
      status: () => this.st,
      received: () => this.received,
      last: () => this.lastProbe,
    });
    if (mark) this.lastProbe = mark;
    return probe;
  }

  /** Tears polling (or the webhook) down and connects again with the live config. */
  async restart(): Promise<void> {
    if (this.closed) return;
    this.ctx.logger.warn("telegram: restarting the channel");
    this.lifecycle = this.lifecycle.then(() => this.reconfigure());
    await this.lifecycle;
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
      const o = {
        markdown: opts?.markdown ?? true,
        ...(opts?.approvalChoices?.length ? { approvalChoices: opts.approvalChoices } : {}),
        ...(opts?.approvalHash ? { approvalHash: opts.approvalHash } : {}),
        ...(opts?.approvalShowAll ? { approvalShowAll: true } : {}),
        ...(opts?.silent ? { silent: true } : {}),
      };
      if (opts?.approvalId) await this.questions.send(target, text, { ...o, approvalId: opts.approvalId });
      else await this.relay.sendText(target, text, o);
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
    this.track(this.relay.cleanupLeftovers(), "reply");
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

  private poll(api: Api, token: string, apiRoot: string): Promise<void> {
    return pollUpdates({
      api,
      signal: this.abort.signal,
      clock: this.ctx.clock,
      logger: this.ctx.logger,
      stopping: () => this.stopping,
      stallS: () => this.cfg().poll_stall_s,
      offset: () => this.store?.offset() ?? 0,
      answered: (updates) => {
        if (this.st.state !== "connected") this.setState("connected", "long polling");
        if (updates.length > 0) {
          this.inbound();
          this.received += updates.length;
        }
        this.accept(api, token, apiRoot, updates);
      },
      fatal: (err) => this.fatal(err),
      setState: (state, detail) => this.setState(state, detail),
    });
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

  // --- inbound ----------------------------------------------------------------------------------

  private async dispatch(api: Api, token: string, apiRoot: string, u: Update): Promise<void> {
    const me = this.me;
    if (!me) return;
    if (u.callback_query) {
      const press = approvalButton(
        api,
        u.callback_query,
        (id) => isChannelOwner(this.ctx.config(), "telegram", id),
        this.router,
        (id, user) => this.showAll(id, user),
      );
      // A refusal is answered before the next update; an accepted press runs like a reply.
      return press.accepted ? this.track(press.done, "reply") : void (await press.done);
    }
    const env = {
      ctx: this.ctx,
      cfg: this.cfg(),
      me,
      pairing: this.pairing,
      relay: this.relay,
      signal: this.abort.signal,
      router: this.router,
      audio: this.media.audio,
      typing: (addr: string) => void this.adapter.typing(addr),
    };
    const chat = await translateMessage(env, api, token, apiRoot, u);
    // `handle` submits synchronously (the user message is committed) before its first await.
    if (chat) this.track(this.router.handle(chat), "reply");
  }
}

/** Creates the Telegram channel (call `start()`; it connects in the background). */
export function createTelegramChannel(ctx: CoreContext, deps: TelegramDeps): TelegramChannel {
  return new TelegramChannel(ctx, deps);
}
