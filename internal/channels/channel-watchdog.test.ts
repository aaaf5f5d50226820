/**
 * The channel watchdog against the real Telegram channel and a fake Telegram that silently stops
 * delivering updates (getUpdates answers, empty, while updates are pending). Fake clock for the
 * watchdog's checks; real HTTP to the fake platform; the owner's other channel is an in-memory one.
 */
import { afterEach, beforeAll, afterAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer } from "../../test/fakes/telegram-server.js";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { until } from "../../test/helpers/scheduler-harness.js";
import { FakeClock } from "../core/clock.js";
import { createModelRouter } from "../models/router.js";
import { createAgentHost } from "../agent/host.js";
import { ChannelRegistry } from "./registry.js";
import { MemoryChannel } from "./memory-channel.js";
import { createTelegramChannel, type TelegramChannel } from "./telegram/telegram-channel.js";
import { createChannelWatchdog, type ChannelWatchdog } from "./channel-watchdog.js";

const CHECK_S = 60;
const owner = { id: 111, first_name: "Ann" };
let llm: FakeOpenAI;
let tg: FakeTelegramServer;
let core: TestCore | undefined;
let ch: TelegramChannel | undefined;
let wd: ChannelWatchdog | undefined;

beforeAll(async () => {
  llm = await startFakeOpenAI();
  llm.setHandler(() => ({ text: "here" }));
});
afterAll(async () => {
  await llm.close();
});
afterEach(async () => {
  await wd?.stop();
  await ch?.stop();
  await tg?.close();
  core?.close();
  wd = ch = core = undefined;
});

describe("channel watchdog", () => {
  it("detects a Telegram that silently stops delivering, restarts it, then reports it dead once, and clears", async () => {
    tg = await startFakeTelegram();
    const clock = new FakeClock(Date.now());
    core = createTestCore(
      {
        models: {
          providers: { a: { base_url: llm.baseUrl, api_key: "sk-a" } },
          primary: "a/m1",
          max_retries: 0,
          timeout_s: 10,
        },
        channels: {
          telegram: {
            enabled: true,
            token: tg.token,
            api_root: tg.apiRoot,
            dm_policy: "open",
            // Longer than any fake-clock step, so the poll's own stall timer stays out of the way.
            poll_stall_s: 3600,
            stream: { mode: "off" },
          },
        },
        channel_watchdog: { check_s: CHECK_S, down_s: 300, silence_s: 900 },
      },
      { clock },
    );
    const c = core;
    const host = createAgentHost({
      ctx: c.ctx,
      model: createModelRouter({ config: () => c.ctx.config(), logger: c.ctx.logger, clock }),
    });
    const registry = new ChannelRegistry();
    const other = new MemoryChannel("test");
    await other.start();
    registry.add(other);
    registry.setLastTarget("test:owner");
    ch = createTelegramChannel(c.ctx, { host, registry });
    registry.add(ch);
    await ch.start();
    await until(() => ch!.status().state === "connected", "telegram connected");
    const states: { channel: string; state: string; detail?: string }[] = [];
    c.ctx.bus.on("channel.state", (p) => states.push(p));

    // Healthy: a message goes both ways, the liveness marks are set, the probe is fine.
    tg.pushText(owner, "hello");
    await until(() => tg.visible(owner.id).length === 1, "the first answer");
    expect(ch.status()).toMatchObject({ lastInboundAt: expect.any(Number), lastSentAt: expect.any(Number) });
    const w = createChannelWatchdog(c.ctx, registry);
    wd = w;
    await w.start();
    const step = async (): Promise<void> => {
      await clock.advance(CHECK_S * 1000);
      await w.idle();
    };
    await step();
    expect(w.episodes()).toEqual([]);
    expect(w.probes().telegram).toMatchObject({ ok: true });
    expect(w.health().state).toBe("ok");

    // The platform keeps answering polls, but with nothing, while a message waits.
    tg.silent = true;
    tg.pushText(owner, "are you there?");
    const silentFrom = clock.now();
    const getMes = (): number => tg.calls.filter((x) => x.method === "getMe").length;
    const before = getMes();
    await step(); // first sight of a pending update: could be one that just arrived
    expect(w.episodes()).toEqual([]);
    await step(); // still pending, nothing received: stuck -> restart
    expect(w.episodes()).toEqual([expect.objectContaining({ channel: "telegram", phase: "restarted" })]);
    await until(() => getMes() > before && ch!.status().state === "connected", "the restarted channel");
    expect(w.health().state).toBe("degraded");
    await step(); // still stuck after the restart: dead, the owner is told on the other channel
    const dead = w.episodes()[0]!;
    expect(dead.phase).toBe("dead");
    expect(clock.now() - silentFrom).toBeLessThanOrEqual(3 * CHECK_S * 1000);
    await until(() => other.sent.length === 1, "the owner told");
    expect(other.sent[0]).toMatchObject({ target: "owner" });
    expect(other.sent[0]!.text).toContain("The telegram channel is not working: Telegram holds 1 update(s)");
    expect(w.health()).toMatchObject({ state: "error", detail: expect.stringContaining("dead: telegram") });
    expect(states).toContainEqual(expect.objectContaining({ channel: "telegram", state: "dead" }));
    await step();
    await step();
    expect(other.sent).toHaveLength(1);

    // The platform delivers again: the waiting message is answered, the episode ends, the owner hears.
    tg.silent = false;
    tg.pushText(owner, "back?"); // wakes the long poll held by the fake
    // (Two messages arriving together are answered in one turn.)
    await until(() => tg.visible(owner.id).length === 2, "the answer to the waiting messages", 30_000);
    await step();
    expect(w.episodes()).toEqual([]);
    expect(w.health().state).toBe("ok");
    await until(() => other.sent.length === 2, "the all-clear");
    expect(other.sent[1]!.text).toBe("The telegram channel works again.");
  }, 60_000);
});
