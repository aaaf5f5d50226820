/**
 * The Telegram long-polling loop (`getUpdates` + offset) of the channel (telegram-channel.ts).
 *
 * Invariants: a poll that gets no answer for `poll_stall_s` is aborted and started again at once;
 * a network error backs off 1 s .. 30 s (or Telegram's `retry_after`); a permanent failure (the
 * host's `fatal`) ends the loop; nothing here moves the offset (the host stores updates first).
 */
import { GrammyError, type Api } from "grammy";
import type { Update } from "grammy/types";
import { sleep, type Clock } from "../../core/clock.js";
import type { Logger } from "../../log/logger.js";
import type { ChannelState } from "../channel.js";
import { gs } from "./telegram-api.js";

/** What the poll loop reads of, and reports to, the running channel. */
export interface PollHost {
  api: Api;
  /** Aborted when the channel stops (ends the loop and any poll in flight). */
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
  stopping(): boolean;
  /** The live `channels.telegram.poll_stall_s`. */
  stallS(): number;
  /** The next update id to ask for (the stored offset). */
  offset(): number;
  /** A poll answered (possibly with no updates). */
  answered(updates: readonly Update[]): void;
  /** True (and the channel is stopped with a clear error) when `err` is permanent. */
  fatal(err: unknown): boolean;
  setState(state: ChannelState, detail?: string): void;
}

/** Polls until the channel stops or a permanent failure. */
export async function pollUpdates(h: PollHost): Promise<void> {
  const { api, signal, clock } = h;
  let delay = 1000;
  while (!h.stopping()) {
    const stallS = h.stallS();
    const timeout = Math.max(1, Math.min(25, stallS - 3));
    const req = new AbortController();
    const onStop = (): void => req.abort(signal.reason);
    signal.addEventListener("abort", onStop, { once: true });
    let stalled = false;
    const watchdog = clock.setTimeout(() => {
      stalled = true;
      req.abort(new Error("poll stalled"));
    }, stallS * 1000);
    watchdog.unref?.();
    try {
      const updates = await api.getUpdates({ offset: h.offset(), timeout, limit: 100 }, gs(req.signal));
      delay = 1000;
      h.answered(updates);
    } catch (err) {
      if (h.stopping()) break;
      if (h.fatal(err)) return;
      if (stalled) {
        h.logger.warn(`telegram: no answer to getUpdates for ${stallS}s; restarting the poll`);
        h.setState("reconnecting", "poll stalled; restarted");
        continue;
      }
      const msg =
        err instanceof GrammyError ? `${err.error_code} ${err.description}` : (err as Error).message;
      h.setState("reconnecting", `getUpdates failed: ${msg}`);
      h.logger.warn({ err: msg, retryInMs: delay }, "telegram: polling failed; backing off");
      const retryAfter = err instanceof GrammyError ? err.parameters.retry_after : undefined;
      await sleep(clock, retryAfter ? retryAfter * 1000 : delay, signal).catch(() => undefined);
      delay = Math.min(delay * 2, 30_000);
    } finally {
      clock.clearTimeout(watchdog);
      signal.removeEventListener("abort", onStop);
    }
  }
}
