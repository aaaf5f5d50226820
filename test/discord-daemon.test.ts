/**
 * Discord through the real daemon as a user runs it: a `familiar run` child process against the fake
 * Discord API and gateway and the fake model. With FAMILIAR_TEST_DIST=1 (CI's bundle smoke run) this
 * is the built bundle, whose Discord chunk must still find discord.js's classes by their own names
 * (`constructor.name === "Collection"`): the bundle keeps library names without esbuild's global
 * `keepNames` (cmd/bundle-keep-names.mjs).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeDiscord, type FakeDiscord } from "./fakes/discord-server.js";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { cleanupDaemons, startDaemonProcess } from "./helpers/daemon.js";

let llm: FakeOpenAI;
let discord: FakeDiscord;

beforeAll(async () => {
  llm = await startFakeOpenAI();
  discord = await startFakeDiscord();
});
afterAll(async () => {
  await discord.close();
  await llm.close();
});
afterEach(async () => {
  await cleanupDaemons();
});

describe("discord in a daemon process", () => {
  it("connects, shows in /healthz and answers a DM", async () => {
    const d = await startDaemonProcess({
      config: {
        models: {
          providers: { fake: { base_url: llm.baseUrl, api_key: "sk" } },
          primary: "fake/m",
          max_retries: 0,
        },
        channels: {
          discord: { enabled: true, token: discord.token, api_base: discord.apiBase, dm_policy: "open" },
        },
      },
      timeoutMs: 60_000,
    });
    let state: string | undefined;
    for (let i = 0; i < 600 && state !== "connected"; i++) {
      const h = (await (await fetch(`${d.url}/healthz`)).json()) as {
        channels: Record<string, { state: string; detail?: string }>;
      };
      state = h.channels.discord?.state;
      if (state === "error") throw new Error(`discord failed: ${h.channels.discord?.detail ?? "?"}`);
      if (state !== "connected") await new Promise((r) => setTimeout(r, 50));
    }
    expect(state).toBe("connected");
    const before = llm.requests.length;
    discord.userMessage({
      channelId: "800000000000000019",
      content: "hello from discord",
      author: { id: "17", username: "dana" },
    });
    await discord.waitFor(
      () => discord.channelMessages("800000000000000019").some((m) => m.content.length > 0),
      25_000,
      "the answer",
    );
    expect(llm.requests.length).toBeGreaterThan(before);
    expect(JSON.stringify(llm.requests.at(-1))).toContain("hello from discord");
  });
});
