/**
 * The lifecycle every chat channel shares (Telegram, Discord): its state and health, the handlers in
 * flight it waits for at stop, the config reloads it reacts to, one at a time, and its pairing store,
 * whose approved users it tells they can talk (pairing-welcome.ts: swept while connected). A channel
 * extends it and keeps only its transport and its translation of platform updates.
 */
import type { Config } from "../../config/schema.js";
import type { ServiceHealth } from "../../core/service.js";
import type { CoreContext } from "../../runtime/context.js";
import type { AgentSource } from "../../agent/agents.js";
import type { AgentHost } from "../../core/host.js";
import type { ApprovalResolver } from "../../inbound/commands.js";
import type { FrontDesk } from "../../inbound/front-desk.js";
import type { ChannelState, ChannelStatus } from "../channel.js";
import type { ChannelRegistry } from "../registry.js";
import { createMediaParts, type MediaParts } from "../../media/media-parts.js";
import type { SendOptions } from "../../core/outbox.js";
import { PairingStore } from "./pairing.js";
import { PairingWelcome } from "./pairing-welcome.js";

/** What every chat channel receives from the wiring. */
export interface ChatChannelDeps {
  host: AgentHost;
  /**
   * The daemon's one front desk (routing, commands, submit), shared with the gateway's doors. A
   * channel built on its own (tests) gets one of its own from `host`, `approvals`, `agentSources`.
   */
  desk?: FrontDesk;
  /** Remembers the owner's last target (and is the Outbox). */
  registry?: ChannelRegistry;
  approvals?: ApprovalResolver;
  /** File and API agents, so `/agent <id>` and routing reach them too. */
  agentSources?: readonly AgentSource[];
  /** Transcription, speech and the voice reply switch (shared by the channels; built when absent). */
  media?: MediaParts;
}

export abstract class ChatChannelBase {
  protected st: ChannelStatus;
  protected inflight = new Set<Promise<unknown>>();
  private unsubscribe: (() => void) | undefined;
  /** Reconfigurations run one after another: two quick reloads never leave two transports running. */
  protected lifecycle: Promise<void> = Promise.resolve();

  /** Transcription, speech and the voice reply switch (the daemon's shared parts, or built here). */
  protected readonly media: MediaParts;
  /** Pending pairing codes and the users the owner approved. */
  readonly pairing: PairingStore;
  /** Tells users approved by pairing that they can talk now; runs while the channel is connected. */
  private readonly welcome: PairingWelcome;

  constructor(
    protected ctx: CoreContext,
    /** Label for logs: `telegram`, `discord`. */
    private label: "telegram" | "discord",
    media?: MediaParts,
    /** The target of a user's private chat (`<userId>`, `user:<userId>`), for the pairing welcome. */
    dmTarget: (userId: string) => string = (id) => id,
  ) {
    this.st = { state: "stopped", since: ctx.clock.now() };
    this.media = media ?? createMediaParts(ctx);
    this.pairing = new PairingStore(ctx.db, ctx.clock);
    this.welcome = new PairingWelcome({
      store: this.pairing,
      channel: label,
      send: (userId, text) => this.send(dmTarget(userId), text, { markdown: false }),
      ready: () => this.st.state === "connected",
      clock: ctx.clock,
      logger: ctx.logger,
    });
  }

  /** Sends a message to a target of this channel (Channel.send). */
  abstract send(target: string, text: string, opts?: SendOptions): Promise<void>;

  /** Tells users approved by pairing (not told yet) that they can talk now; returns how many. */
  welcomePaired(): Promise<number> {
    return this.welcome.sweep();
  }

  /** The bot's name for `status` (`@name`) once known. */
  protected abstract identity(): string | undefined;

  /** Called after every state change (logging, waiters). */
  protected onState(_prev: ChannelState, _next: ChannelState, _detail?: string): void {}

  protected setState(state: ChannelState, detail?: string): void {
    const prev = this.st.state;
    const identity = this.identity();
    this.st = {
      state,
      since: this.ctx.clock.now(),
      ...(detail ? { detail } : {}),
      ...(identity ? { identity } : {}),
    };
    this.onState(prev, state, detail);
    // Approvals made while the daemon runs (the CLI writes the store) are looked for while connected.
    if (state === "connected" && prev !== "connected") this.welcome.start();
    else if (state !== "connected" && prev === "connected") this.welcome.stop();
    // Live consumers (the console's overview, `familiar status --watch`-style clients) follow the
    // bus; without this a channel's change reached them only with the next 30 s tick.
    if (prev !== state)
      this.ctx.bus.emit("channel.state", { channel: this.label, state, ...(detail ? { detail } : {}) });
  }

  /** Liveness marks (see ChannelStatus): kept apart from the state so they never spam the bus. */
  protected live: { lastHeardAt?: number; lastInboundAt?: number; lastSentAt?: number } = {};

  /** The platform answered. */
  protected heard(): void {
    this.live.lastHeardAt = this.ctx.clock.now();
  }
  /** A user's message arrived (implies heard). */
  protected inbound(): void {
    this.live.lastHeardAt = this.live.lastInboundAt = this.ctx.clock.now();
  }
  /** A message went out (implies heard). */
  protected sent(): void {
    this.live.lastHeardAt = this.live.lastSentAt = this.ctx.clock.now();
  }

  status(): ChannelStatus {
    return { ...this.st, ...this.live };
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

  /** Keeps a handler's promise until it settles (stop waits for it); its failure is logged. */
  protected track(p: Promise<unknown>, what: string): void {
    const t = p.catch((err: unknown) => {
      this.ctx.logger.error(
        { channel: this.label, err: (err as Error).message },
        `${this.label}: ${what} failed`,
      );
    });
    this.inflight.add(t);
    void t.finally(() => this.inflight.delete(t));
  }

  /** Runs `react` (serialised) on every config swap where `changed(next, prev)` holds. */
  protected watchConfig(changed: (next: Config, prev: Config) => boolean, react: () => Promise<void>): void {
    this.unsubscribe ??= this.ctx.onConfig((next, prev) => {
      if (!changed(next, prev)) return;
      this.lifecycle = this.lifecycle.then(react).catch((err: unknown) => {
        this.ctx.logger.error({ err: (err as Error).message }, `${this.label}: reconfiguration failed`);
      });
    });
  }

  /** Stops reacting to config swaps and waits for a reconfiguration in progress. */
  protected async unwatchConfig(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.lifecycle;
  }
}
