/**
 * The real daemon (child process) with a fake Telegram that silently stops delivering updates: the
 * watchdog (small thresholds in config) restarts the channel, then reports it through the gateway
 * (a `channel.state` event with state `dead`) and `/healthz` stops saying `ok`; `channels.probe`
 * (what `familiar doctor --live` calls) reports the round trip. When Telegram delivers again, all
 * clears.
 */
import { afterAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer } from "./fakes/telegram-server.js";
import { execFile } from "node:child_process";
import { childEnv, cleanupDaemons, cliCommand, startDaemonProcess } from "./helpers/daemon.js";
import { waitFor } from "./gateway/harness.js";
import { GatewayClient } from "../internal/gateway/client.js";

let llm: FakeOpenAI | undefined;
let tg: FakeTelegramServer | undefined;
afterAll(async () => {
  await cleanupDaemons();
  await llm?.close();
  await tg?.close();
});

const owner = { id: 5150, first_name: "Ann" };

describe("a Telegram that goes silent, in the running daemon", () => {
  it("is restarted, then reported dead through the gateway and /healthz, and clears when it is back", async () => {
    llm = await startFakeOpenAI();
    llm.setHandler(() => ({ text: "here" }));
    const bot = await startFakeTelegram();
    tg = bot;
    const d = await startDaemonProcess({
      config: {
        models: {
          providers: { fake: { base_url: llm.baseUrl, api_key: "sk-fake" } },
          primary: "fake/m",
          max_retries: 0,
        },
        channels: {
          telegram: {
            enabled: true,
            token: bot.token,
            api_root: bot.apiRoot,
            dm_policy: "open",
            stream: { mode: "off" },
          },
        },
        channel_watchdog: { check_s: 1, down_s: 30, silence_s: 120 },
      },
      timeoutMs: 60_000,
    });
    const health = async (): Promise<{
      status: string;
      services: Record<string, { state: string; detail?: string }>;
    }> => (await fetch(`${d.url}/healthz`)).json() as never;
    const client = await GatewayClient.connect({
      url: `ws://127.0.0.1:${d.port}/ws`,
      token: d.token(),
      clientName: "wd",
    });
    const events: { channel: string; state: string; detail?: string }[] = [];
    client.on("channel.state", (p) => events.push(p as (typeof events)[number]));
    try {
      bot.pushText(owner, "hello");
      await bot.waitFor(() => bot.visible(owner.id).length === 1, 30_000, "the first answer");
      await waitFor(async () => (await health()).services["channel-watchdog"]?.state === "ok", 20_000);
      expect((await health()).status).toBe("ok");
      const probe = await client.request<{
        channels: { channel: string; ok: boolean; rttMs: number; lastInboundAt: number | null }[];
      }>("channels.probe", {});
      expect(probe.channels).toEqual([
        expect.objectContaining({ channel: "telegram", ok: true, lastInboundAt: expect.any(Number) }),
      ]);
      expect(probe.channels[0]!.rttMs).toBeGreaterThanOrEqual(0);
      // `familiar doctor --live` prints the same probe as a check line.
      const doctor = await new Promise<string>((res) => {
        const [cmd, ...pre] = cliCommand();
        execFile(
          cmd!,
          [...pre, "doctor", "--live", "--config", d.configPath],
          { env: childEnv(), timeout: 120_000 },
          (_e, out) => res(out),
        );
      });
      expect(doctor).toMatch(
        /^ok {4}live telegram: connected, round trip \d+ ms: getWebhookInfo answered; 0 update\(s\) pending; last heard \d+ s ago$/m,
      );

      const getMes = (): number => bot.calls.filter((c) => c.method === "getMe").length;
      const before = getMes();
      bot.silent = true;
      bot.pushText(owner, "are you there?");
      await waitFor(() => events.some((e) => e.channel === "telegram" && e.state === "dead"), 30_000);
      expect(getMes()).toBeGreaterThan(before);
      const h = await health();
      expect(h.status).toBe("degraded");
      expect(h.services["channel-watchdog"]).toMatchObject({
        state: "error",
        detail: expect.stringContaining("dead: telegram (Telegram holds 1 update(s)"),
      });

      bot.silent = false;
      bot.pushText(owner, "back?");
      await bot.waitFor(() => bot.visible(owner.id).length >= 2, 30_000, "the waiting messages answered");
      await waitFor(async () => (await health()).status === "ok", 30_000);
    } finally {
      await client.close().catch(() => undefined);
      await d.stop();
    }
  }, 180_000);
});
