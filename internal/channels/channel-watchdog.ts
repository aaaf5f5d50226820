/**
 * The channel watchdog: a channel that is down or silent does not stay green.
 *
 * Every `channel_watchdog.check_s` each running channel is judged from its status (state and since,
 * when the platform last answered) and, where it has one, a live probe (Telegram: webhook info with
 * the pending update count; Discord: a REST call). A channel is in trouble when it has not been
 * connected for `down_s`, has not heard from its platform for `silence_s`, or its probe fails or finds
 * it stuck (the platform holds messages the channel is not receiving).
 *
 * Invariants:
 * - the first remedy is a restart of the channel's transport, once per episode;
 * - still in trouble at the next check after the restart, the channel is dead: the owner is told ONCE
 *   per episode through another channel that is connected, the console hears it on the bus
 *   (`channel.state` with state `dead`), and the watchdog's health is `error`, which turns `/healthz`
 *   away from `ok`; a dead channel is restarted again every 5 checks, quietly;
 * - when it recovers, the episode ends (logged, and the owner told it is back if they were told it
 *   was dead), and health returns to `ok`.
 */
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import type { TimerHandle } from "../core/clock.js";
import type { Channel, ChannelProbe } from "./channel.js";
import type { ChannelRegistry } from "./registry.js";

/** One channel's episode of trouble. */
export interface WatchdogEpisode {
  channel: string;
  phase: "restarted" | "dead";
  reason: string;
  since: number;
  restartedAt: number;
  checksSinceRestart: number;
  /** Where the owner was told (undefined: no other channel was up). */
  toldAt?: string;
}

export interface ChannelWatchdog extends Service {
  /** Runs one check now (or returns the one in progress). */
  check(): Promise<void>;
  /** Resolves when no check is in progress. */
  idle(): Promise<void>;
  episodes(): WatchdogEpisode[];
  /** The last probe result per channel. */
  probes(): Record<string, ChannelProbe>;
}

const RESTART_DEAD_EVERY = 5;
/** A channel (re)connecting, not yet for `down_s`: no verdict yet. */
const WAIT = Symbol("wait");

/** Creates the watchdog over the registry's channels (not started). */
export function createChannelWatchdog(ctx: CoreContext, registry: ChannelRegistry): ChannelWatchdog {
  const log = ctx.logger.child({ service: "channel-watchdog" });
  const episodes = new Map<string, WatchdogEpisode>();
  const lastProbes: Record<string, ChannelProbe> = {};
  let timer: TimerHandle | undefined;
  let running: Promise<void> | undefined;
  let started = false;
  const cfg = (): ReturnType<CoreContext["config"]>["channel_watchdog"] => ctx.config().channel_watchdog;

  /** Why the channel is in trouble, undefined when it works, WAIT while it is (re)connecting. */
  async function trouble(ch: Channel): Promise<string | typeof WAIT | undefined> {
    const c = cfg();
    const st = ch.status();
    const now = ctx.clock.now();
    if (st.state !== "connected") {
      if (now - st.since >= c.down_s * 1000)
        return `${st.state} for ${Math.round((now - st.since) / 1000)} s${st.detail ? ` (${st.detail})` : ""}`;
      return WAIT;
    }
    if (ch.probe) {
      const p = await ch
        .probe()
        .catch((err: unknown): ChannelProbe => ({ ok: false, rttMs: 0, detail: (err as Error).message }));
      lastProbes[ch.id] = p;
      if (!p.ok) return p.detail;
    }
    // Read again: a successful probe is itself an answer from the platform.
    const after = ch.status();
    const heard = after.lastHeardAt ?? after.since;
    if (after.lastHeardAt !== undefined && ctx.clock.now() - heard >= c.silence_s * 1000)
      return `no answer from the platform for ${Math.round((ctx.clock.now() - heard) / 1000)} s`;
    return undefined;
  }

  function tellOwner(id: string, text: string): string | undefined {
    const target = registry.ownerTargetAvoiding(id);
    if (!target) {
      log.error({ channel: id }, `channel watchdog: no other channel is up to tell the owner: ${text}`);
      return undefined;
    }
    void registry
      .deliver(target, text)
      .catch((err: unknown) =>
        log.warn({ channel: id, err: (err as Error).message }, `channel watchdog: could not tell ${target}`),
      );
    return target;
  }

  async function checkOne(id: string): Promise<void> {
    const ch = registry.get(id);
    if (!ch) return;
    const st = ch.status();
    const ep = episodes.get(id);
    if (st.state === "disabled" || st.state === "stopped") {
      episodes.delete(id);
      return;
    }
    const why = await trouble(ch);
    if (why === WAIT) return;
    const now = ctx.clock.now();
    if (!why) {
      if (ep) {
        episodes.delete(id);
        log.info({ channel: id }, `channel watchdog: ${id} works again`);
        ctx.bus.emit("channel.state", { channel: id, state: st.state, detail: "recovered" });
        if (ep.phase === "dead" && ep.toldAt) tellOwner(id, `The ${id} channel works again.`);
      }
      return;
    }
    if (!ep) {
      log.warn(
        { channel: id, reason: why },
        `channel watchdog: ${id} is not working (${why}); restarting it`,
      );
      episodes.set(id, {
        channel: id,
        phase: "restarted",
        reason: why,
        since: now,
        restartedAt: now,
        checksSinceRestart: 0,
      });
      await ch
        .restart?.()
        .catch((err: unknown) =>
          log.warn({ channel: id, err: (err as Error).message }, `channel watchdog: restarting ${id} failed`),
        );
      return;
    }
    ep.reason = why;
    ep.checksSinceRestart++;
    if (ep.phase === "restarted") {
      ep.phase = "dead";
      const text =
        `The ${id} channel is not working: ${why}. It was restarted and is still down, so messages ` +
        `there are not being received or sent. Check channels.${id} in config.yaml, or run \`familiar doctor --live\`.`;
      log.error({ channel: id, reason: why }, `channel watchdog: ${id} is dead after a restart: ${why}`);
      ctx.bus.emit("channel.state", { channel: id, state: "dead", detail: why });
      const told = tellOwner(id, text);
      if (told) ep.toldAt = told;
      return;
    }
    if (ep.checksSinceRestart % RESTART_DEAD_EVERY === 0) await ch.restart?.().catch(() => undefined);
  }

  async function checkAll(): Promise<void> {
    for (const ch of registry.list()) {
      try {
        await checkOne(ch.id);
      } catch (err) {
        log.warn({ channel: ch.id, err: (err as Error).message }, "channel watchdog: check failed");
      }
    }
  }

  function check(): Promise<void> {
    running ??= checkAll().finally(() => {
      running = undefined;
    });
    return running;
  }

  function arm(): void {
    if (!started) return;
    timer = ctx.clock.setTimeout(() => {
      timer = undefined;
      if (!cfg().enabled) return arm();
      void check().finally(arm);
    }, cfg().check_s * 1000);
    timer.unref?.();
  }

  return {
    name: "channel-watchdog",
    async start() {
      started = true;
      arm();
    },
    async stop() {
      started = false;
      if (timer) ctx.clock.clearTimeout(timer);
      timer = undefined;
      await running;
    },
    health(): ServiceHealth {
      if (!cfg().enabled) return { state: "disabled", detail: "channel_watchdog.enabled is false" };
      const dead = [...episodes.values()].filter((e) => e.phase === "dead");
      if (dead.length)
        return {
          state: "error",
          detail: `dead: ${dead.map((e) => `${e.channel} (${e.reason})`).join("; ")}`,
        };
      const restarted = [...episodes.values()];
      if (restarted.length)
        return {
          state: "degraded",
          detail: `restarted: ${restarted.map((e) => `${e.channel} (${e.reason})`).join("; ")}`,
        };
      return { state: "ok" };
    },
    check,
    idle: () => running ?? Promise.resolve(),
    episodes: () => [...episodes.values()],
    probes: () => ({ ...lastProbes }),
  };
}
