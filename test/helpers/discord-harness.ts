/**
 * Test harness for the Discord channel: a real AgentHost over the fake OpenAI server, a real
 * SQLite store in a temp dir, the fake Discord (gateway + REST) and the real discord.js client.
 * Used by the Discord end-to-end tests and the channel contract suite; never loaded by the daemon.
 */
import { startFakeDiscord, type FakeDiscord, type FakeDiscordOptions } from "../fakes/discord-server.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { createTestCore, type TestCore } from "./core.js";
import { createAgentHost } from "../../internal/agent/host.js";
import { createModelRouter } from "../../internal/models/router.js";
import { ChannelRegistry } from "../../internal/channels/registry.js";
import type { ApprovalResolver } from "../../internal/inbound/commands.js";
import {
  createDiscordChannel,
  type DiscordChannel,
} from "../../internal/channels/discord/discord-channel.js";

export const GUILD = "600000000000000001";
export const CHAN = "600000000000000011";
export const OTHER_CHAN = "600000000000000012";
export const THREAD = "600000000000000021";
export const ANN = { id: "700000000000000001", username: "ann", global_name: "Ann" };
export const BOB = { id: "700000000000000002", username: "bob" };

export interface DiscordHarness {
  ai: FakeOpenAI;
  discord: FakeDiscord;
  core: TestCore;
  registry: ChannelRegistry;
  channel: DiscordChannel;
  /** Starts another channel instance on the same store (a daemon restart). */
  restart(): Promise<DiscordChannel>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  discord?: Record<string, unknown>;
  fake?: FakeDiscordOptions;
  approvals?: ApprovalResolver;
  /** Start the channel (default true). */
  start?: boolean;
  /** Wait for the gateway READY after start (default true). */
  connect?: boolean;
  /** Extra model providers (e.g. a fake audio server for `media`). */
  providers?: Record<string, unknown>;
  /** The `media` config section. */
  media?: Record<string, unknown>;
}

/** Builds and starts everything; `discord` overrides keys of `channels.discord`. */
export async function startDiscordHarness(opts: HarnessOptions = {}): Promise<DiscordHarness> {
  const ai = await startFakeOpenAI();
  const discord = await startFakeDiscord({
    guilds: [
      {
        id: GUILD,
        channels: [{ id: CHAN }, { id: OTHER_CHAN }],
        threads: [{ id: THREAD, parentId: CHAN }],
      },
    ],
    ...opts.fake,
  });
  const core = createTestCore({
    models: {
      providers: { a: { base_url: ai.baseUrl, api_key: "sk-test" }, ...opts.providers },
      primary: "a/m1",
      max_retries: 0,
      timeout_s: 10,
    },
    ...(opts.media ? { media: opts.media } : {}),
    channels: {
      discord: {
        enabled: true,
        token: discord.token,
        api_base: discord.apiBase,
        dm_policy: "open",
        guilds: { [GUILD]: { channels: [CHAN] } },
        stream: { edit_interval_ms: 200 },
        ...opts.discord,
      },
    },
  });
  const model = createModelRouter({
    config: () => core.ctx.config(),
    logger: core.ctx.logger,
    clock: core.ctx.clock,
  });
  const host = createAgentHost({ ctx: core.ctx, model });
  const registry = new ChannelRegistry();
  const make = async (): Promise<DiscordChannel> => {
    const ch = createDiscordChannel(core.ctx, {
      host,
      registry,
      ...(opts.approvals ? { approvals: opts.approvals } : {}),
    });
    registry.add(ch);
    if (opts.start === false) return ch;
    await ch.start();
    if (opts.connect !== false) await withTimeout(ch.whenConnected(), 20_000, "the Discord gateway READY");
    return ch;
  };
  const h: DiscordHarness = {
    ai,
    discord,
    core,
    registry,
    channel: await make(),
    async restart() {
      await h.channel.stop();
      h.channel = await make();
      return h.channel;
    },
    async close() {
      await h.channel.stop().catch(() => undefined);
      await host.drain(5000).catch(() => undefined);
      await discord.close();
      await ai.close();
      core.close();
    },
  };
  return h;
}

/** Rejects when `p` does not settle within `ms`. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>(
        (_, rej) => (t = setTimeout(() => rej(new Error(`timed out waiting for ${what}`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(t);
  }
}
