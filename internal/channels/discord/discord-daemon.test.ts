/**
 * The Discord channel inside a real daemon: wired by internal/daemon/services.ts (lazy import),
 * listed in /healthz through the ChannelRegistry, and a bad token leaves the daemon running.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeDiscord, type FakeDiscord } from "../../../test/fakes/discord-server.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "../../../test/gateway/harness.js";

let fake: FakeDiscord | undefined;
let d: GatewayHarness | undefined;
afterEach(async () => {
  await d?.close();
  await fake?.close();
  d = undefined;
  fake = undefined;
});

interface Health {
  status: string;
  channels: Record<string, { state: string; detail?: string }>;
}

async function health(h: GatewayHarness): Promise<Health> {
  return (await (await fetch(`${h.base}/healthz`)).json()) as Health;
}

describe("discord in the daemon", () => {
  it("connects, shows in /healthz and answers a DM", async (t) => {
    fake = await startFakeDiscord();
    d = await startGatewayDaemon({
      config: {
        channels: {
          discord: { enabled: true, token: fake.token, api_base: fake.apiBase, dm_policy: "open" },
        },
      },
    });
    // The agent host is wired by the agent core's section of services.ts.
    if (!d.daemon.parts.host) return t.skip("no agent host wired in this build");
    const h = d;
    await waitFor(async () => (await health(h)).channels.discord?.state === "connected");
    fake.userMessage({
      channelId: "800000000000000009",
      content: "hi daemon",
      author: { id: "7", username: "ann" },
    });
    await fake.waitFor(
      () => fake?.channelMessages("800000000000000009").some((m) => m.content.length > 0) ?? false,
      25_000,
      "the answer",
    );
    expect(d.fake.requests.length).toBeGreaterThan(0);
  });

  it("keeps the daemon running with one clear error on a bad token", async (t) => {
    fake = await startFakeDiscord();
    d = await startGatewayDaemon({
      config: { channels: { discord: { enabled: true, token: "wrong", api_base: fake.apiBase } } },
    });
    if (!d.daemon.parts.host) return t.skip("no agent host wired in this build");
    const h = d;
    const state = await waitFor(async () => {
      const s = (await health(h)).channels.discord;
      return s?.state === "error" ? s : undefined;
    });
    expect(state.detail).toMatch(/invalid token/);
    expect((await health(h)).status).toBe("ok");
  });
});
