/**
 * Voice notes in, documents in, files and voice out: the Telegram channel against the fake Bot API
 * (multipart uploads), the real agent host and tools over the fake model, and the fake audio server
 * for `/v1/audio/transcriptions` and `/v1/audio/speech`. Real SQLite and workspace in a temp dir.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../../test/fakes/openai-server.js";
import {
  startFakeTelegram,
  type FakeTelegramServer,
  type FakeUser,
} from "../../../test/fakes/telegram-server.js";
import { FAKE_SPEECH, startFakeAudio, type FakeAudioServer } from "../../../test/fakes/audio-server.js";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { tinyPdf } from "../../../test/helpers/tiny-pdf.js";
import { createModelRouter } from "../../models/router.js";
import { createAgentHost } from "../../agent/host.js";
import { UsageTracker } from "../../agent/usage/usage-tracker.js";
import { createMediaParts } from "../../media/media-parts.js";
import { ToolRegistry } from "../../tools/registry.js";
import { createSendFileTool } from "../../tools/send-file-tool.js";
import { ChannelRegistry } from "../registry.js";
import { createTelegramChannel, type TelegramChannel } from "./telegram-channel.js";

let llm: FakeOpenAI;
let audio: FakeAudioServer;
let tg: FakeTelegramServer;
let core: TestCore | undefined;
let channel: TelegramChannel | undefined;
let usage: UsageTracker;
const owner: FakeUser = { id: 111, first_name: "Ann", username: "ann" };

beforeAll(async () => {
  llm = await startFakeOpenAI();
  audio = await startFakeAudio();
});
afterAll(async () => {
  await llm.close();
  await audio.close();
});
beforeEach(async () => {
  tg = await startFakeTelegram();
});
afterEach(async () => {
  await channel?.stop();
  channel = undefined;
  await tg.close();
  core?.close();
  core = undefined;
  llm.reset();
  audio.transcriptions.length = 0;
  audio.speeches.length = 0;
});

function config(media: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    models: {
      providers: {
        a: { base_url: llm.baseUrl, api_key: "sk-a" },
        voice: { base_url: audio.baseUrl, api_key: "sk-voice" },
      },
      primary: "a/m1",
      max_retries: 0,
      timeout_s: 10,
    },
    media,
    channels: {
      telegram: {
        enabled: true,
        token: tg.token,
        api_root: tg.apiRoot,
        dm_policy: "allowlist",
        allow_from: [owner.id],
        stream: { mode: "off" },
      },
    },
  };
}

const ON = {
  transcription: { provider: "voice", language: "en", max_bytes: 100_000, price_per_minute: 0.006 },
  speech: { provider: "voice", voice: "nova", price_per_million_chars: 15 },
};

async function setup(media: Record<string, unknown> = ON): Promise<TestCore> {
  core = createTestCore(config(media));
  const c = core;
  const router = createModelRouter({
    config: () => c.ctx.config(),
    logger: c.ctx.logger,
    clock: c.ctx.clock,
  });
  const registry = new ChannelRegistry();
  const tools = new ToolRegistry({ config: () => c.ctx.config(), logger: c.ctx.logger });
  tools.register(createSendFileTool({ config: () => c.ctx.config(), channels: registry }));
  const host = createAgentHost({
    ctx: c.ctx,
    model: router,
    toolsFor: (agent) => tools.forAgent(agent.id, agent.tools),
  });
  usage = new UsageTracker({ db: c.ctx.db, config: () => c.ctx.config() });
  channel = createTelegramChannel(c.ctx, { host, registry, media: createMediaParts(c.ctx, usage) });
  registry.add(channel);
  await channel.start();
  await until(() => channel?.status().state === "connected", "connected");
  return c;
}

async function until(pred: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const texts = (): string[] => tg.visible(owner.id).map((m) => m.text);
const lastUser = (i = 0): string => {
  const msgs = llm.requests[i]?.body?.messages ?? [];
  const u = [...msgs].reverse().find((m) => m.role === "user");
  return typeof u?.content === "string" ? u.content : JSON.stringify(u?.content);
};

describe("telegram media", () => {
  it("transcribes a voice note, shows typing, and the model answers the transcript", async () => {
    const c = await setup();
    audio.transcripts = ["remind me to buy oat milk"];
    const ogg = Buffer.from("OggS-voice-bytes");
    const id = tg.addFile(ogg, "voice/file_9.oga");
    llm.enqueue({ text: "Noted: oat milk." });
    tg.pushVoice(owner, id, ogg.length);
    await tg.waitFor(() => texts().includes("Noted: oat milk."), 15_000, "answer");
    expect(audio.transcriptions).toHaveLength(1);
    const t = audio.transcriptions[0]!;
    expect(t.file).toEqual(ogg);
    expect(t.model).toBe("whisper-1");
    expect(t.language).toBe("en");
    expect(t.auth).toBe("Bearer sk-voice");
    const said = lastUser();
    expect(said).toContain("[Voice note");
    expect(said).toContain("remind me to buy oat milk");
    // The recording is kept in the workspace for tools.
    const rel = /saved in the workspace at (\S+);/.exec(said)?.[1] ?? "";
    expect(readFileSync(join(c.ctx.config().workspace, rel))).toEqual(ogg);
    expect(tg.callsOf("sendChatAction").length).toBeGreaterThan(0);
    // Usage: 3 s at $0.006/min recorded like a model call.
    const rows = c.ctx.db
      .prepare<[], { provider: string; model: string; cost: number }>(
        "SELECT provider, model, cost FROM usage WHERE model = 'whisper-1'",
      )
      .all();
    expect(rows).toEqual([{ provider: "voice", model: "whisper-1", cost: expect.closeTo(0.0003, 8) }]);
  });

  it("refuses an over-size voice note with a clear reply and makes no transcription call", async () => {
    await setup();
    const id = tg.addFile(Buffer.alloc(10, 1), "voice/big.oga");
    tg.pushVoice(owner, id, 5_000_000);
    await tg.waitFor(() => texts().length === 1, 15_000, "refusal");
    expect(texts()[0]).toMatch(/too long to transcribe \(4\.8 MB; the limit is 0\.1 MB\)/);
    expect(audio.transcriptions).toHaveLength(0);
    expect(llm.requests).toHaveLength(0);
    expect(tg.callsOf("getFile")).toHaveLength(0);
  });

  it("says what to configure when transcription is off (the default)", async () => {
    await setup({});
    const id = tg.addFile(Buffer.from("OggS"), "voice/x.oga");
    tg.pushVoice(owner, id, 4);
    await tg.waitFor(() => texts().length === 1, 15_000, "reply");
    expect(texts()[0]).toContain("media.transcription.provider");
    expect(audio.transcriptions).toHaveLength(0);
    expect(llm.requests).toHaveLength(0);
  });

  it("reads a PDF and a text document into the model's message", async () => {
    const c = await setup();
    const pdf = tinyPdf("Invoice 42: total 99 EUR due Friday");
    const pid = tg.addFile(pdf, "documents/invoice.pdf");
    llm.enqueue({ text: "It is due Friday." });
    tg.pushDocument(owner, pid, { name: "invoice.pdf", mime: "application/pdf", caption: "when is it due?" });
    await tg.waitFor(() => texts().includes("It is due Friday."), 15_000, "pdf answer");
    const said = lastUser();
    expect(said).toContain("when is it due?");
    expect(said).toContain("Invoice 42: total 99 EUR due Friday");
    const rel = /saved in the workspace at (\S+)\]/.exec(said)?.[1] ?? "";
    expect(readFileSync(join(c.ctx.config().workspace, rel))).toEqual(pdf);

    const tid = tg.addFile(Buffer.from("a,b\n1,2\n"), "documents/data.csv");
    llm.enqueue({ text: "Two columns." });
    tg.pushDocument(owner, tid, { name: "data.csv", mime: "text/csv" });
    await tg.waitFor(() => texts().includes("Two columns."), 15_000, "csv answer");
    expect(lastUser(1)).toContain("a,b\n1,2");
  });

  it("send_file delivers a workspace file as a photo and refuses a path outside", async () => {
    const c = await setup();
    const ws = c.ctx.config().workspace;
    mkdirSync(join(ws, "out"), { recursive: true });
    const png = Buffer.from("\u0089PNG fake image bytes");
    writeFileSync(join(ws, "out", "chart.png"), png);
    writeFileSync(join(c.dir, "secret.txt"), "top secret");
    symlinkSync(join(c.dir, "secret.txt"), join(ws, "out", "link.txt"));
    llm.enqueue(
      { toolCalls: [{ name: "send_file", arguments: { path: "out/chart.png", caption: "Your chart" } }] },
      { toolCalls: [{ name: "send_file", arguments: { path: "out/link.txt" } }] },
      { toolCalls: [{ name: "send_file", arguments: { path: "../secret.txt" } }] },
      { text: "Sent the chart." },
    );
    tg.pushText(owner, "send me the chart");
    await tg.waitFor(() => texts().includes("Sent the chart."), 15_000, "answer");
    expect(tg.sentFiles).toHaveLength(1);
    expect(tg.sentFiles[0]).toMatchObject({ method: "sendPhoto", name: "chart.png", caption: "Your chart" });
    expect(tg.sentFiles[0]?.data).toEqual(png);
    const toolResults = (llm.requests[3]?.body?.messages ?? []).filter((m) => m.role === "tool");
    expect(String(toolResults[0]?.content)).toContain("sent out/chart.png");
    expect(String(toolResults[1]?.content)).toMatch(/outside the workspace/);
    expect(String(toolResults[2]?.content)).toMatch(/not allowed|outside/);
  });

  it("send_file refuses a file over Telegram's limit before uploading", async () => {
    const c = await setup();
    const ws = c.ctx.config().workspace;
    // A sparse 11 MB file: over the 10 MB photo limit without writing 11 MB.
    const { openSync, ftruncateSync, closeSync } = await import("node:fs");
    const fd = openSync(join(ws, "huge.jpg"), "w");
    ftruncateSync(fd, 11 * 1024 * 1024);
    closeSync(fd);
    llm.enqueue(
      { toolCalls: [{ name: "send_file", arguments: { path: "huge.jpg" } }] },
      { text: "Too big." },
    );
    tg.pushText(owner, "send the photo");
    await tg.waitFor(() => texts().includes("Too big."), 15_000, "answer");
    expect(tg.sentFiles).toHaveLength(0);
    const tool = (llm.requests[1]?.body?.messages ?? []).find((m) => m.role === "tool");
    expect(String(tool?.content)).toMatch(/11\.0 MB; telegram accepts at most 10\.0 MB for a photo/);
  });

  it("/voice on answers with a voice note captioned with the text; /voice off goes back to text", async () => {
    const c = await setup();
    tg.pushText(owner, "/voice on");
    await tg.waitFor(() => texts().some((t) => t.startsWith("Voice replies are on")), 15_000, "voice on");
    llm.enqueue({ text: "It is **sunny** today." });
    tg.pushText(owner, "weather?");
    await tg.waitFor(() => tg.sentFiles.length === 1, 15_000, "voice reply");
    expect(tg.sentFiles[0]).toMatchObject({ method: "sendVoice", caption: "It is **sunny** today." });
    expect(tg.sentFiles[0]?.data).toEqual(FAKE_SPEECH);
    expect(audio.speeches).toEqual([
      {
        model: "tts-1",
        voice: "nova",
        input: "It is sunny today.",
        responseFormat: "opus",
        auth: "Bearer sk-voice",
      },
    ]);
    // The text went out once, as the caption: no separate text message.
    expect(texts().filter((t) => t.includes("sunny"))).toHaveLength(0);
    const cost = c.ctx.db
      .prepare<[], { cost: number }>("SELECT cost FROM usage WHERE model = 'tts-1'")
      .get()?.cost;
    expect(cost).toBeCloseTo((15 * "It is sunny today.".length) / 1_000_000, 10);

    tg.pushText(owner, "/voice off");
    await tg.waitFor(() => texts().includes("Voice replies are off in this chat."), 15_000, "voice off");
    llm.enqueue({ text: "Plain text again." });
    tg.pushText(owner, "and now?");
    await tg.waitFor(() => texts().includes("Plain text again."), 15_000, "text reply");
    expect(tg.sentFiles).toHaveLength(1);
  });

  it("a failing transcription is reported once; a failing speech call still delivers the text", async () => {
    await setup();
    const id = tg.addFile(Buffer.from("OggS-x"), "voice/f.oga");
    audio.failNext = 500;
    tg.pushVoice(owner, id, 6);
    await tg.waitFor(() => texts().length === 1, 15_000, "failure reply");
    expect(texts()[0]).toMatch(/^The transcription service \(voice\) failed \(500\)/);
    expect(llm.requests).toHaveLength(0);

    tg.pushText(owner, "/voice on");
    await tg.waitFor(() => texts().length === 2, 15_000, "voice on");
    audio.failNext = 500;
    llm.enqueue({ text: "Answer in text after all." });
    tg.pushText(owner, "talk to me");
    await tg.waitFor(() => texts().includes("Answer in text after all."), 15_000, "text fallback");
    expect(tg.sentFiles).toHaveLength(0);
  });

  it("/voice on without a speech provider says what to configure", async () => {
    await setup({ transcription: ON.transcription });
    tg.pushText(owner, "/voice on");
    await tg.waitFor(() => texts().length === 1, 15_000, "reply");
    expect(texts()[0]).toContain("media.speech.provider");
  });
});
