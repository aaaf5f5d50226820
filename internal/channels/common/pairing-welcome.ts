/**
 * Tells a stranger whose pairing request the owner approved that they can now talk to the
 * assistant: one message in their private chat. Approvals happen outside the channel (the
 * `familiar pairing approve` CLI writes SQLite directly, the console goes through the gateway), so
 * the channel sweeps the store while it is connected (chat-channel-base.ts): when it connects, every
 * {@link WELCOME_SWEEP_MS}, and when asked (`sweep()`, right after a gateway approval).
 *
 * Invariants:
 * - only users approved by a code are greeted (never config `allow_from`, imports or upgrades);
 * - each approved user is told at most once: the claim (`markWelcomed`) is stored before the send,
 *   and given back only when the send failed for a passing reason (unreachable, not running), so a
 *   later sweep retries; a refusal by the platform is not retried;
 * - sweeps of one channel never overlap.
 */
import type { Clock, TimerHandle } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import type { PairingStore } from "./pairing.js";

/** How often the store is looked at for approvals made by the CLI. */
export const WELCOME_SWEEP_MS = 2000;

/** The message an approved user gets. */
export const PAIRING_WELCOME =
  "The owner approved your request: you can talk to the assistant now. Just send a message.";

export interface PairingWelcomeDeps {
  store: Pick<PairingStore, "unwelcomed" | "markWelcomed" | "unmarkWelcomed">;
  channel: "telegram" | "discord";
  /** Sends one message to the user's private chat. */
  send: (userId: string, text: string) => Promise<void>;
  /** Whether the channel is connected (a sweep while it is not waits for the next one). */
  ready: () => boolean;
  clock: Clock;
  logger?: Logger | undefined;
}

export class PairingWelcome {
  private timer: TimerHandle | undefined;
  /** The last sweep: the next one starts after it (sweeps never overlap). */
  private chain: Promise<number> = Promise.resolve(0);
  private stopped = true;

  constructor(private d: PairingWelcomeDeps) {}

  /** Sweeps now and then every {@link WELCOME_SWEEP_MS} until `stop()`. */
  start(): void {
    this.stopped = false;
    const tick = (): void => {
      if (this.stopped) return;
      void this.sweep().finally(() => {
        if (this.stopped) return;
        this.timer = this.d.clock.setTimeout(tick, WELCOME_SWEEP_MS);
        this.timer.unref?.();
      });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.d.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Greets every approved, not yet greeted user; returns how many were told. */
  sweep(): Promise<number> {
    // A call during a sweep waits for it, then looks again (its approval may be newer).
    const next = this.chain.then(() => this.once());
    this.chain = next.catch(() => 0);
    return next;
  }

  private async once(): Promise<number> {
    const { store, channel, send, logger } = this.d;
    if (!this.d.ready()) return 0;
    let told = 0;
    let users: { userId: string }[];
    try {
      users = store.unwelcomed(channel);
    } catch (err) {
      logger?.warn({ channel, err: (err as Error).message }, "could not read approved pairing requests");
      return 0;
    }
    for (const { userId } of users) {
      if (!store.markWelcomed(channel, userId)) continue;
      try {
        await send(userId, PAIRING_WELCOME);
        told++;
        logger?.info({ channel, userId }, "told an approved user they can talk to the assistant");
      } catch (err) {
        // The platform refused (the user blocked the bot, never opened a DM): not retried forever.
        const refused = (err as { code?: unknown }).code === "CHANNEL_REFUSED";
        if (!refused) store.unmarkWelcomed(channel, userId);
        logger?.warn(
          { channel, userId, err: (err as Error).message, retry: !refused },
          "could not tell an approved user",
        );
      }
    }
    return told;
  }
}
