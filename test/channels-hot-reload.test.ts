/**
 * Chat channels follow config hot reloads in the running daemon (in-process `Daemon.start`, real
 * config file, the fake Bot API and the fake model): a Telegram channel that is off at start starts
 * when a reload sets `enabled: true` (no restart), and stops polling when a reload turns it off again.
 */
import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { harnessConfig, startGatewayDaemon, waitFor, type GatewayHarness } from "./gateway/harness.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "./fakes/telegram-server.js";

let h: GatewayHarness | undefined;
let tg: FakeTelegramServer | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
  await tg?.close();
  tg = undefined;
});

const owner: FakeUser = { id: 4242, first_name: "Ann" };

interface Health {
  services: Record<string, { state: string; detail?: string }>;
  channels: Record<string, { state: string; detail?: string }>;
}

describe("channels and config hot reload", () => {
  it("starts Telegram when a reload enables it and stops it when a reload disables it", async () => {
    tg = await startFakeTelegram();
    const telegram = (enabled: boolean): Record<string, unknown> => ({
      channels: {
        telegram: {
          enabled,
          token: tg!.token,
          api_root: tg!.apiRoot,
          dm_policy: "allowlist",
          allow_from: [owner.id],
          stream: { mode: "off" },
        },
      },
    });
    h = await startGatewayDaemon({ config: telegram(false) });
    const health = async (): Promise<Health> => (await (await fetch(`${h!.base}/healthz`)).json()) as Health;
    // Off: the service says so, nothing talks to Telegram, no channel is registered.
    expect((await health()).services.telegram).toMatchObject({ state: "disabled" });
    expect((await health()).channels.telegram).toBeUndefined();
    expect(tg.calls).toHaveLength(0);

    const write = (enabled: boolean): void =>
      writeFileSync(
        h!.configPath,
        JSON.stringify(harnessConfig(h!.dir, h!.port, h!.fake.baseUrl, { config: telegram(enabled) })),
      );
    write(true);
    expect(h.daemon.config.reload()).toMatchObject({ ok: true, restartRequired: [] });
    await waitFor(async () => (await health()).channels.telegram?.state === "connected");
    expect((await health()).services.telegram?.state).toBe("ok");
    tg.pushText(owner, "hello after reload");
    await tg.waitFor(
      () => tg!.visible(owner.id).some((m) => m.text === "echo: hello after reload"),
      15_000,
      "answer",
    );

    write(false);
    h.daemon.config.reload();
    await waitFor(async () => (await health()).channels.telegram?.state === "disabled");
    expect((await health()).services.telegram?.state).toBe("disabled");
    // No poll is running any more: an update pushed now stays unanswered.
    const polls = tg.callsOf("getUpdates").length;
    tg.pushText(owner, "anyone?");
    await new Promise((r) => setTimeout(r, 300));
    expect(tg.callsOf("getUpdates").length).toBeLessThanOrEqual(polls + 1);
    expect(tg.visible(owner.id).map((m) => m.text)).toEqual(["echo: hello after reload"]);
    await expect(h.daemon.channels.deliver(`telegram:${owner.id}`, "proactive")).rejects.toMatchObject({
      code: "CHANNEL_NOT_RUNNING",
    });

    // On again: the update that waited is answered, once.
    write(true);
    h.daemon.config.reload();
    await tg.waitFor(
      () => tg!.visible(owner.id).some((m) => m.text === "echo: anyone?"),
      15_000,
      "answer after re-enable",
    );
    expect(tg.visible(owner.id).map((m) => m.text)).toEqual(["echo: hello after reload", "echo: anyone?"]);
  }, 60_000);
});
