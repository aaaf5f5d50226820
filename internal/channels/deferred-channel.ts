/**
 * A channel whose module loads after the daemon is up. grammy and discord.js take most of a cold
 * start (discord.js alone ~0.5 s on a 2-core machine), and a channel connects in the background
 * anyway, so the daemon registers this stand-in, answers /healthz, and imports, builds and starts the
 * real channel in the background.
 *
 * Invariants:
 * - until the real channel exists, status and health say "starting" (or "error" when loading failed);
 * - `send` waits for the real channel, so a delivery queued during start is not refused;
 * - `stop` waits for a load in progress and stops what it started; a channel loaded after `stop` is
 *   never started;
 * - with a `gate` (`channels.<id>.enabled`), a channel that is off never loads (state "disabled") and
 *   loads and starts as soon as a hot reload turns it on: no restart needed. Once loaded, the real
 *   channel follows later reloads itself (it disconnects when turned off again).
 */
import type { Logger } from "../log/logger.js";
import type { Service, ServiceHealth } from "../runtime/context.js";
import {
  ChannelError,
  type Channel,
  type ChannelProbe,
  type ChannelStatus,
  type OutboundFile,
  type OutboundFileKind,
  type SendOptions,
} from "./channel.js";

/** What a deferred channel builds: a channel that is also a daemon service. */
export type ServiceChannel = Channel & Service;

/** Optional enable switch of a deferred channel, followed across hot reloads. */
export interface ChannelGate {
  /** Reads the live `channels.<id>.enabled`. */
  enabled: () => boolean;
  /** Subscribes to config swaps (ctx.onConfig); returns the unsubscribe function. */
  onConfig: (fn: () => void) => () => void;
  /**
   * Called once, when the channel is first enabled: at construction when it is on already (so a
   * delivery made before `start`, e.g. a resumed turn, finds it), or by the reload that turns it on.
   */
  onEnabled?: (self: DeferredChannel) => void;
}

export class DeferredChannel implements Channel, Service {
  readonly name: string;
  private real: ServiceChannel | undefined;
  private loading: Promise<ServiceChannel | undefined> | undefined;
  private failure: string | undefined;
  private stopped = false;
  private readonly since = Date.now();
  private enabledOnce = false;
  private unsubscribe: (() => void) | undefined;

  /**
   * @param afterReady when given, loading begins once it calls back (the daemon passes its
   *   `daemon.ready` event), so the import never competes with the start itself; otherwise at `start`.
   */
  constructor(
    readonly id: string,
    private readonly load: () => Promise<ServiceChannel>,
    private readonly logger: Logger,
    private readonly afterReady?: (begin: () => void) => void,
    private readonly gate?: ChannelGate,
  ) {
    this.name = id;
    if (gate?.enabled()) this.activate();
  }

  /** True while a gate says the channel is off and nothing was loaded yet. */
  private get off(): boolean {
    return !this.real && !this.loading && this.gate !== undefined && !this.gate.enabled();
  }

  /** The real channel once loaded (tests, diagnostics). */
  get loaded(): ServiceChannel | undefined {
    return this.real;
  }

  /**
   * Resolves with the real channel once it has started (undefined when loading failed, when stopped,
   * or when the gate says the channel is off).
   */
  ready(): Promise<ServiceChannel | undefined> {
    if (this.off) return Promise.resolve(undefined);
    return this.begin();
  }

  /** Schedules loading in the background; never waits for the channel module. */
  start(): Promise<void> {
    if (this.gate && !this.gate.enabled()) {
      // Off for now: load the moment a hot reload turns the channel on.
      this.unsubscribe ??= this.gate.onConfig(() => {
        if (this.stopped || this.loading || !this.gate?.enabled()) return;
        this.logger.info({ channel: this.id }, `${this.id}: enabled by a config reload; starting`);
        this.activate();
        void this.begin();
      });
      return Promise.resolve();
    }
    this.activate();
    if (this.afterReady) this.afterReady(() => void this.begin());
    else void this.begin();
    return Promise.resolve();
  }

  private activate(): void {
    if (this.enabledOnce) return;
    this.enabledOnce = true;
    this.gate?.onEnabled?.(this);
  }

  private begin(): Promise<ServiceChannel | undefined> {
    this.loading ??= (async () => {
      try {
        const ch = await this.load();
        if (this.stopped) return undefined;
        this.real = ch;
        await ch.start();
        return ch;
      } catch (err) {
        this.failure = `could not start the ${this.id} channel: ${(err as Error).message}`;
        this.logger.error({ channel: this.id, err: (err as Error).message }, this.failure);
        return undefined;
      }
    })();
    return this.loading;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.loading;
    await this.real?.stop();
  }

  status(): ChannelStatus {
    if (this.real) return this.real.status();
    if (this.off) return { state: "disabled", detail: this.offDetail(), since: this.since };
    return this.failure
      ? { state: "error", detail: this.failure, since: this.since }
      : { state: "starting", since: this.since };
  }

  private offDetail(): string {
    return `channels.${this.id}.enabled is false`;
  }

  health(): ServiceHealth {
    if (this.real) return this.real.health();
    if (this.off) return { state: "disabled", detail: this.offDetail() };
    return this.failure ? { state: "error", detail: this.failure } : { state: "starting" };
  }

  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    if (this.off)
      throw new ChannelError("CHANNEL_NOT_RUNNING", `the ${this.id} channel is off (${this.offDetail()})`);
    const ch = this.real ?? (await this.begin());
    if (!ch)
      throw new ChannelError("CHANNEL_NOT_RUNNING", this.failure ?? `the ${this.id} channel is stopped`);
    return ch.send(target, text, opts);
  }

  /** Sends a file through the real channel (waiting for it like `send`). */
  async sendFile(target: string, file: OutboundFile): Promise<void> {
    if (this.off)
      throw new ChannelError("CHANNEL_NOT_RUNNING", `the ${this.id} channel is off (${this.offDetail()})`);
    const ch = this.real ?? (await this.begin());
    if (!ch)
      throw new ChannelError("CHANNEL_NOT_RUNNING", this.failure ?? `the ${this.id} channel is stopped`);
    if (!ch.sendFile) throw new ChannelError("CHANNEL_NO_FILES", `the ${this.id} channel cannot send files`);
    return ch.sendFile(target, file);
  }

  /** Probes the real channel; a channel not loaded (or without a probe) reports why. */
  async probe(): Promise<ChannelProbe> {
    if (this.off) return { ok: false, rttMs: 0, detail: this.offDetail() };
    if (!this.real) return { ok: false, rttMs: 0, detail: this.failure ?? "still starting" };
    if (!this.real.probe) return { ok: true, rttMs: 0, detail: "no probe for this channel" };
    return this.real.probe();
  }

  /**
   * Closes an approval question the real channel sent (its buttons edited away); false before it
   * loaded (it sent nothing then).
   */
  async closeApproval(approvalId: string, note: string): Promise<boolean> {
    return (await this.real?.closeApproval?.(approvalId, note)) ?? false;
  }

  /** Tells users approved by pairing that they can talk now (0 before the real channel loaded). */
  async welcomePaired(): Promise<number> {
    return (await this.real?.welcomePaired?.()) ?? 0;
  }

  /** Restarts the real channel's transport (nothing to restart before it loaded). */
  async restart(): Promise<void> {
    await this.real?.restart?.();
  }

  /** The real channel's upload limit (Infinity until it is loaded: the upload checks again). */
  maxFileBytes(kind: OutboundFileKind): number {
    return this.real?.maxFileBytes?.(kind) ?? Number.POSITIVE_INFINITY;
  }
}
