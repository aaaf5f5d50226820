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
 *   never started.
 */
import type { Logger } from "../log/logger.js";
import type { Service, ServiceHealth } from "../core/context.js";
import { ChannelError, type Channel, type ChannelStatus, type SendOptions } from "./channel.js";

/** What a deferred channel builds: a channel that is also a daemon service. */
export type ServiceChannel = Channel & Service;

export class DeferredChannel implements Channel, Service {
  readonly name: string;
  private real: ServiceChannel | undefined;
  private loading: Promise<ServiceChannel | undefined> | undefined;
  private failure: string | undefined;
  private stopped = false;
  private readonly since = Date.now();

  /**
   * @param afterReady when given, loading begins once it calls back (the daemon passes its
   *   `daemon.ready` event), so the import never competes with the start itself; otherwise at `start`.
   */
  constructor(
    readonly id: string,
    private readonly load: () => Promise<ServiceChannel>,
    private readonly logger: Logger,
    private readonly afterReady?: (begin: () => void) => void,
  ) {
    this.name = id;
  }

  /** The real channel once loaded (tests, diagnostics). */
  get loaded(): ServiceChannel | undefined {
    return this.real;
  }

  /** Resolves with the real channel once it has started (undefined when loading failed or stopped). */
  ready(): Promise<ServiceChannel | undefined> {
    return this.begin();
  }

  /** Schedules loading in the background; never waits for the channel module. */
  start(): Promise<void> {
    if (this.afterReady) this.afterReady(() => void this.begin());
    else void this.begin();
    return Promise.resolve();
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
    await this.loading;
    await this.real?.stop();
  }

  status(): ChannelStatus {
    if (this.real) return this.real.status();
    return this.failure
      ? { state: "error", detail: this.failure, since: this.since }
      : { state: "starting", since: this.since };
  }

  health(): ServiceHealth {
    if (this.real) return this.real.health();
    return this.failure ? { state: "error", detail: this.failure } : { state: "starting" };
  }

  async send(target: string, text: string, opts?: SendOptions): Promise<void> {
    const ch = this.real ?? (await this.begin());
    if (!ch)
      throw new ChannelError("CHANNEL_NOT_RUNNING", this.failure ?? `the ${this.id} channel is stopped`);
    return ch.send(target, text, opts);
  }
}
