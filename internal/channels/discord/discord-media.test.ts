/**
 * Discord voice messages, audio and PDF attachments in, files and voice replies out: the real
 * channel (discord.js) against the fake Discord (gateway, REST with multipart uploads, a CDN for
 * attachments), the fake model, and the fake audio server for transcription and speech.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ANN, startDiscordHarness, type DiscordHarness } from "../../../test/helpers/discord-harness.js";
import { FAKE_SPEECH, startFakeAudio, type FakeAudioServer } from "../../../test/fakes/audio-server.js";
import { tinyPdf } from "../../../test/helpers/tiny-pdf.js";
import { sendWorkspaceFile } from "../../tools/send-file.js";
import { IS_VOICE_MESSAGE } from "./attachments.js";

const DM = "800000000000000001";
let audio: FakeAudioServer;
let h: DiscordHarness | undefined;

beforeAll(async () => {
  audio = await startFakeAudio();
});
afterAll(async () => {
  await audio.close();
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  audio.transcriptions.length = 0;
  audio.speeches.length = 0;
});

const media = {
  transcription: { provider: "voice", max_bytes: 50_000 },
  speech: { provider: "voice" },
};
const start = (): Promise<DiscordHarness> =>
  startDiscordHarness({
    providers: { voice: { base_url: audio.baseUrl, api_key: "sk-voice" } },
    media,
    discord: { stream: { mode: "off" } },
  });
const contents = (hh: DiscordHarness): string[] => hh.discord.channelMessages(DM).map((m) => m.content);
const lastUser = (hh: DiscordHarness, i = 0): string => {
  const msgs = hh.ai.requests[i]?.body?.messages ?? [];
  return String([...msgs].reverse().find((m) => m.role === "user")?.content ?? "");
};

describe("discord media", () => {
  it("transcribes a voice message and the model answers the transcript", async () => {
    h = await start();
    audio.transcripts = ["what's on my calendar"];
    const ogg = Buffer.from("OggS-discord-voice");
    const att = h.discord.addAttachment(ogg, "voice-message.ogg", {
      contentType: "audio/ogg",
      durationSecs: 2,
    });
    h.ai.enqueue({ text: "Nothing today." });
    h.discord.userMessage({
      channelId: DM,
      content: "",
      author: ANN,
      extra: { attachments: [att], flags: IS_VOICE_MESSAGE },
    });
    await h.discord.waitFor(() => contents(h!).includes("Nothing today."), 25_000, "answer");
    expect(audio.transcriptions).toHaveLength(1);
    expect(audio.transcriptions[0]?.file).toEqual(ogg);
    expect(lastUser(h)).toContain("[Voice note");
    expect(lastUser(h)).toContain("what's on my calendar");
  });

  it("refuses an over-size audio attachment with a reply, no download and no transcription", async () => {
    h = await start();
    const att = h.discord.addAttachment(Buffer.from("x"), "long.mp3", {
      contentType: "audio/mpeg",
      size: 900_000,
    });
    h.discord.userMessage({ channelId: DM, content: "", author: ANN, extra: { attachments: [att] } });
    await h.discord.waitFor(() => contents(h!).length === 1, 25_000, "refusal");
    expect(contents(h)[0]).toMatch(/too long to transcribe/);
    expect(audio.transcriptions).toHaveLength(0);
    expect(h.discord.attachmentDownloads).toBe(0);
    expect(h.ai.requests).toHaveLength(0);
  });

  it("reads a PDF attachment into the model's message", async () => {
    h = await start();
    const att = h.discord.addAttachment(tinyPdf("Meeting moved to 3pm"), "note.pdf", {
      contentType: "application/pdf",
    });
    h.ai.enqueue({ text: "3pm it is." });
    h.discord.userMessage({
      channelId: DM,
      content: "summarise",
      author: ANN,
      extra: { attachments: [att] },
    });
    await h.discord.waitFor(() => contents(h!).includes("3pm it is."), 25_000, "answer");
    expect(lastUser(h)).toContain("Meeting moved to 3pm");
    expect(lastUser(h)).toContain("summarise");
  });

  it("uploads a workspace file as an attachment and refuses a path outside", async () => {
    h = await start();
    const ws = h.core.ctx.config().workspace;
    mkdirSync(join(ws, "out"), { recursive: true });
    writeFileSync(join(ws, "out", "list.md"), "# groceries\n- oat milk\n");
    const r = await sendWorkspaceFile(h.registry, {
      workspace: ws,
      target: `discord:${DM}`,
      path: "out/list.md",
      caption: "Your list",
    });
    expect(r).toContain("as a document");
    expect(h.discord.uploads).toHaveLength(1);
    expect(h.discord.uploads[0]).toMatchObject({ channelId: DM, name: "list.md", content: "Your list" });
    expect(h.discord.uploads[0]?.data.toString()).toBe("# groceries\n- oat milk\n");
    await expect(
      sendWorkspaceFile(h.registry, { workspace: ws, target: `discord:${DM}`, path: "../../etc/passwd" }),
    ).rejects.toThrow(/not allowed|outside/);
    expect(h.discord.uploads).toHaveLength(1);
  });

  it("/voice on answers with an audio attachment carrying the text", async () => {
    h = await start();
    h.discord.userMessage({ channelId: DM, content: "/voice on", author: ANN });
    await h.discord.waitFor(
      () => contents(h!).some((t) => t.startsWith("Voice replies are on")),
      25_000,
      "on",
    );
    h.ai.enqueue({ text: "Sure thing." });
    h.discord.userMessage({ channelId: DM, content: "say hi", author: ANN });
    await h.discord.waitFor(() => h!.discord.uploads.length === 1, 25_000, "voice upload");
    expect(h.discord.uploads[0]).toMatchObject({ name: "answer.ogg", content: "Sure thing." });
    expect(h.discord.uploads[0]?.data).toEqual(FAKE_SPEECH);
    expect(audio.speeches[0]?.input).toBe("Sure thing.");
  });
});
