/**
 * Fault injection, chat APIs: Telegram (the daemon in-process against the fake Bot API) under 429 storms
 * and 5xx on sendMessage and editMessageText, failing and dropped long polls; Discord (the real
 * discord.js channel against the fake gateway + REST) under repeated websocket drops with resume and
 * REST 429 / 5xx storms. Invariant: every message is answered exactly once, completely.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../../internal/daemon/daemon.js";
import { markdownToTelegramHtml } from "../../internal/channels/telegram/markdown-html.js";
import { lastUserOf as lastUser, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "../fakes/telegram-server.js";
import {
  ANN,
  BOB,
  CHAN,
  GUILD,
  startDiscordHarness,
  type DiscordHarness,
} from "../helpers/discord-harness.js";
import { freePort, waitFor } from "../gateway/harness.js";

/** The streamed answer the fake model gives to `text` (long enough for several preview edits). */
function answerTo(text: string): string {
  return `Answer to ${text}: ${"this reply streams in small pieces. ".repeat(3)}Done.`;
}

describe("Telegram API faults", () => {
  let llm: FakeOpenAI;
  let tg: FakeTelegramServer;
  let daemon: Daemon | undefined;
  let dir: string;

  beforeAll(async () => {
    llm = await startFakeOpenAI();
  });
  afterAll(async () => {
    await llm.close();
  });
  beforeEach(async () => {
    llm.reset();
    llm.setHandler((req) => ({ text: answerTo(lastUser(req)), chunkSize: 6, delayMs: 25 }));
    tg = await startFakeTelegram();
    dir = mkdtempSync(join(tmpdir(), "familiar-tgfault-"));
    mkdirSync(join(dir, "workspace"), { recursive: true });
    const configPath = join(dir, "config.yaml");
    writeFileSync(
      configPath,
      JSON.stringify({
        data_dir: join(dir, "data"),
        workspace: join(dir, "workspace"),
        timezone: "UTC",
        log: { level: "warn", pretty: false },
        models: {
          providers: { fake: { base_url: llm.baseUrl, api_key: "sk-fake" } },
          primary: "fake/m",
          max_retries: 0,
          timeout_s: 10,
        },
        agents: { max_concurrent: 8 },
        gateway: { bind: "127.0.0.1", port: await freePort() },
        channels: {
          telegram: {
            enabled: true,
            token: tg.token,
            api_root: tg.apiRoot,
            dm_policy: "open",
            stream: { edit_interval_ms: 200 },
          },
        },
      }),
    );
    const sink = new PassThrough();
    sink.resume();
    daemon = await Daemon.start({ configPath, watchConfig: false, logDestination: sink, env: {} });
    await waitFor(() => daemon?.channels.get("telegram")?.status().state === "connected", 15_000);
  });
  afterEach(async () => {
    await daemon?.stop("test");
    daemon = undefined;
    await tg.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const users: FakeUser[] = Array.from({ length: 5 }, (_, i) => ({ id: 7100 + i, first_name: `U${i}` }));

  /** Each user's chat shows exactly one message: the complete answer; the model ran once per message. */
  async function expectAnsweredOnce(texts: Map<number, string>): Promise<void> {
    for (const [id, text] of texts) {
      const final = markdownToTelegramHtml(answerTo(text));
      await tg.waitFor(() => tg.visible(id).some((m) => m.text === final), 40_000, `the answer to ${id}`);
    }
    // Let any stray retry or duplicate surface before counting.
    await new Promise((r) => setTimeout(r, 1500));
    for (const [id, text] of texts) {
      const final = markdownToTelegramHtml(answerTo(text));
      expect(
        tg.visible(id).map((m) => m.text),
        `chat ${id}`,
      ).toEqual([final]);
    }
    expect(llm.requests.map(lastUser).sort()).toEqual([...texts.values()].sort());
  }

  it("a 429 storm and 5xx on send and edit: every message answered exactly once", async () => {
    tg.failNext("sendMessage", { status: 429, retryAfter: 1 }, 4);
    tg.failNext("sendMessage", { status: 502, description: "Bad Gateway" }, 2);
    tg.failNext("editMessageText", { status: 429, retryAfter: 1 }, 4);
    tg.failNext("editMessageText", { status: 500 }, 2);
    const texts = new Map(users.map((u) => [u.id, `storm ${u.id}`]));
    for (const u of users) tg.pushText(u, texts.get(u.id)!);
    await expectAnsweredOnce(texts);
    expect(tg.calls.filter((c) => c.status === 429)).toHaveLength(8);
    expect(tg.calls.filter((c) => c.status >= 500)).toHaveLength(4);
  }, 90_000);

  it("failing and dropped long polls: updates are delivered again and answered exactly once", async () => {
    tg.failNext("getUpdates", { status: 502, description: "Bad Gateway" }, 1);
    tg.failNext("getUpdates", { status: 429, retryAfter: 1 }, 1);
    tg.dropPolls(2);
    const texts = new Map(users.slice(0, 3).map((u) => [u.id, `poll ${u.id}`]));
    for (const u of users.slice(0, 3)) tg.pushText(u, texts.get(u.id)!);
    await expectAnsweredOnce(texts);
    expect(tg.droppedPolls).toBe(2);
    // A later update still flows.
    tg.pushText(users[4]!, "later");
    const final = markdownToTelegramHtml(answerTo("later"));
    await tg.waitFor(() => tg.visible(users[4]!.id).some((m) => m.text === final), 20_000, "a later answer");
  }, 90_000);
});

describe("Discord API faults", () => {
  let h: DiscordHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("websocket drops with resume and REST 429/5xx storms: every message answered exactly once", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    ai.setHandler((req) => ({ text: answerTo(lastUser(req)), chunkSize: 8, delayMs: 30 }));
    const DMS = ["800000000000000101", "800000000000000102", "800000000000000103"];
    const sent: { channelId: string; text: string }[] = [];
    const say = (channelId: string, text: string, guild = false): void => {
      sent.push({ channelId, text });
      discord.userMessage({
        channelId,
        content: guild ? `<@${discord.bot.id}> ${text}` : text,
        author: guild ? BOB : ANN,
        ...(guild ? { guildId: GUILD, mentionsBot: true } : {}),
      });
    };
    discord.rateLimit({ method: "POST", path: /^\/channels\/\d+\/messages$/, times: 4, retryAfter: 0.3 });
    discord.rateLimit({
      method: "PATCH",
      path: /^\/channels\/\d+\/messages\/\d+$/,
      times: 4,
      retryAfter: 0.3,
    });
    discord.refuse({
      method: "POST",
      path: /^\/channels\/\d+\/messages$/,
      times: 1,
      status: 502,
      message: "Bad Gateway",
    });

    DMS.forEach((c, i) => say(c, `first ${i}`));
    say(CHAN, "in the guild", true);
    await discord.waitFor(() => discord.channelMessages(DMS[0]!).length > 0, 25_000, "a first preview");
    // The connection drops while replies stream; messages sent meanwhile are replayed on resume.
    discord.dropConnection();
    DMS.forEach((c, i) => say(c, `while down ${i}`));
    await discord.waitFor(() => discord.gateway.resumes === 1 && discord.connected, 20_000, "resumed");
    discord.dropConnection();
    say(DMS[0]!, "after the second drop");
    await discord.waitFor(() => discord.gateway.resumes === 2 && discord.connected, 20_000, "resumed again");

    for (const m of sent)
      await discord.waitFor(
        () => discord.channelMessages(m.channelId).some((x) => x.content === answerTo(m.text)),
        40_000,
        `the answer to "${m.text}"`,
      );
    await new Promise((r) => setTimeout(r, 1500));
    for (const m of sent) {
      const same = discord.channelMessages(m.channelId).filter((x) => x.content === answerTo(m.text));
      expect(same, `answers to "${m.text}"`).toHaveLength(1);
    }
    // One message per answer in each channel: no leftover previews, no duplicates.
    for (const c of [...DMS, CHAN]) {
      const expected = sent.filter((m) => m.channelId === c).map((m) => answerTo(m.text));
      expect(
        discord
          .channelMessages(c)
          .map((x) => x.content)
          .sort(),
        `channel ${c}`,
      ).toEqual(expected.sort());
    }
    expect(ai.requests.map(lastUser).sort()).toEqual(sent.map((m) => m.text).sort());
    expect(discord.gateway.resumes).toBe(2);
    expect(discord.gateway.identifies).toBe(1);
    expect(discord.calls.filter((c) => c.status === 429)).toHaveLength(8);
  }, 120_000);
});
