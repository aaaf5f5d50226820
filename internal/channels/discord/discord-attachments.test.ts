/**
 * Every attachment of a Discord message in one turn: the real channel (discord.js) against the fake
 * Discord (gateway, REST, the CDN serving attachment bytes) and the fake model, whose recorded
 * requests show what the model was given (text and image parts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { ANN, startDiscordHarness, type DiscordHarness } from "../../../test/helpers/discord-harness.js";
import { tinyPdf } from "../../../test/helpers/tiny-pdf.js";

const DM = "800000000000000001";
let h: DiscordHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const start = (opts: { discord?: Record<string, unknown>; media?: Record<string, unknown> } = {}) =>
  startDiscordHarness({
    discord: { stream: { mode: "off" }, ...opts.discord },
    ...(opts.media ? { media: opts.media } : {}),
  });
const contents = (hh: DiscordHarness): string[] => hh.discord.channelMessages(DM).map((m) => m.content);

type Part = { type: string; text?: string; image_url?: { url: string } };
/** The last user message of model request `i`, as parts (a plain string is one text part). */
function userParts(hh: DiscordHarness, i = 0): Part[] {
  const msgs = hh.ai.requests[i]?.body?.messages ?? [];
  const c = [...msgs].reverse().find((m) => m.role === "user")?.content;
  return typeof c === "string" ? [{ type: "text", text: c }] : ((c ?? []) as Part[]);
}
const userText = (hh: DiscordHarness, i = 0): string =>
  userParts(hh, i)
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("\n");
const imageUrls = (hh: DiscordHarness, i = 0): string[] =>
  userParts(hh, i).flatMap((p) => (p.type === "image_url" && p.image_url ? [p.image_url.url] : []));
const send = (hh: DiscordHarness, content: string, attachments: unknown[], id?: string) =>
  hh.discord.userMessage({
    channelId: DM,
    content,
    author: ANN,
    ...(id ? { id } : {}),
    extra: { attachments },
  });

describe("discord attachments", () => {
  it("passes an image to the model as an image part, like Telegram", async () => {
    h = await start();
    const png = Buffer.from("\u0089PNG fake image bytes");
    h.ai.enqueue({ text: "A cat." });
    send(h, "what is this?", [h.discord.addAttachment(png, "cat.png", { contentType: "image/png" })]);
    await h.discord.waitFor(() => contents(h!).includes("A cat."), 25_000, "answer");
    expect(h.ai.requests).toHaveLength(1);
    expect(userText(h)).toBe("what is this?");
    expect(imageUrls(h)).toEqual([`data:image/png;base64,${png.toString("base64")}`]);
  });

  it("gives a PDF, an image and a text file one turn carrying all three, in order", async () => {
    h = await start();
    const jpg = Buffer.from("\u00ff\u00d8 fake jpeg");
    const atts = [
      h.discord.addAttachment(tinyPdf("Invoice total 42 EUR"), "invoice.pdf", {
        contentType: "application/pdf",
      }),
      // No content type: the extension says it is an image.
      h.discord.addAttachment(jpg, "receipt.jpg"),
      h.discord.addAttachment(Buffer.from("paid on 3 May\n"), "notes.txt", { contentType: "text/plain" }),
    ];
    h.ai.enqueue({ text: "All three seen." });
    send(h, "check these", atts);
    await h.discord.waitFor(() => contents(h!).includes("All three seen."), 25_000, "answer");
    expect(h.ai.requests).toHaveLength(1);
    const text = userText(h);
    expect(text.startsWith("check these")).toBe(true);
    expect(text).toContain("Invoice total 42 EUR");
    expect(text).toContain("paid on 3 May");
    expect(text.indexOf("invoice.pdf")).toBeLessThan(text.indexOf("notes.txt"));
    expect(imageUrls(h)).toEqual([`data:image/jpeg;base64,${jpg.toString("base64")}`]);
    expect(h.discord.attachmentDownloads).toBe(3);
  });

  it("refuses an over-size attachment with its reply while the good one reaches the model", async () => {
    h = await start({ discord: { media: { max_image_bytes: 1000 } } });
    const atts = [
      h.discord.addAttachment(Buffer.from("x"), "huge.png", { contentType: "image/png", size: 5000 }),
      h.discord.addAttachment(Buffer.from("x"), "big.pdf", {
        contentType: "application/pdf",
        size: 50 * 1024 * 1024,
      }),
      h.discord.addAttachment(Buffer.from("the good part"), "good.md", { contentType: "text/markdown" }),
    ];
    h.ai.enqueue({ text: "Read the good one." });
    send(h, "", atts);
    await h.discord.waitFor(() => contents(h!).includes("Read the good one."), 25_000, "answer");
    const reply = contents(h)[0] ?? "";
    expect(reply).toContain('"huge.png": The image is too large');
    expect(reply).toContain('"big.pdf": The document is too large');
    // Refused on the announced size: only the good file was downloaded.
    expect(h.discord.attachmentDownloads).toBe(1);
    expect(h.ai.requests).toHaveLength(1);
    expect(userText(h)).toContain("the good part");
    expect(userText(h)).toContain('"big.pdf", which was not read');
    expect(imageUrls(h)).toEqual([]);
  });

  it("bounds the message as a whole: documents share media.documents, images the image limit", async () => {
    h = await start({
      media: { documents: { max_bytes: 3000, max_chars: 1000 } },
      discord: { media: { max_image_bytes: 100 } },
    });
    const atts = [
      h.discord.addAttachment(Buffer.from("a".repeat(800)), "a.txt", { contentType: "text/plain" }),
      h.discord.addAttachment(Buffer.from("b".repeat(800)), "b.txt", { contentType: "text/plain" }),
      h.discord.addAttachment(Buffer.from("c".repeat(2000)), "c.txt", { contentType: "text/plain" }),
      h.discord.addAttachment(Buffer.alloc(60, 1), "one.gif", { contentType: "image/gif" }),
      h.discord.addAttachment(Buffer.alloc(60, 2), "two.gif", { contentType: "image/gif" }),
    ];
    h.ai.enqueue({ text: "Done." });
    send(h, "read all", atts);
    await h.discord.waitFor(() => contents(h!).includes("Done."), 25_000, "answer");
    const text = userText(h);
    // 1000 characters for all documents: a.txt whole, b.txt cut at 200.
    expect(text).toContain("a".repeat(800));
    expect(text).toContain(`<document name="b.txt">\n${"b".repeat(200)}\n</document>`);
    // 3000 bytes for all documents: c.txt (2000 after 1600) is refused before its download.
    expect(text).toContain('"c.txt", which was not read');
    expect(imageUrls(h)).toHaveLength(1);
    const reply = contents(h)[0] ?? "";
    expect(reply).toMatch(/"c\.txt": Not read: .*limit for documents/);
    expect(reply).toMatch(/"two\.gif": Not read: .*limit for images/);
    expect(h.discord.attachmentDownloads).toBe(3);
  });

  it("answers only the replies when nothing is left to read, and runs no turn", async () => {
    h = await start();
    const atts = [
      h.discord.addAttachment(Buffer.from("OggS"), "memo.ogg", { contentType: "audio/ogg" }),
      h.discord.addAttachment(Buffer.from("PK"), "photos.zip", { contentType: "application/zip" }),
    ];
    send(h, "", atts);
    await h.discord.waitFor(() => contents(h!).length === 1, 25_000, "replies");
    const reply = contents(h)[0] ?? "";
    expect(reply).toContain('"memo.ogg": ');
    expect(reply).toContain("media.transcription.provider");
    expect(reply).toContain('but not "photos.zip"');
    // A later message is answered first-hand: the files never made a turn.
    send(h, "hello", []);
    await h.discord.waitFor(() => contents(h!).length === 2, 25_000, "echo");
    expect(h.ai.requests).toHaveLength(1);
    expect(userText(h)).toBe("hello");
    expect(h.discord.attachmentDownloads).toBe(0);
  });

  it("downloads nothing twice when the same message is delivered again", async () => {
    h = await start();
    const atts = [
      h.discord.addAttachment(Buffer.from("list"), "list.txt", { contentType: "text/plain" }),
      h.discord.addAttachment(Buffer.from("\u0089PNG"), "p.png", { contentType: "image/png" }),
    ];
    h.ai.enqueue({ text: "Got both." });
    const msg = send(h, "", atts);
    h.discord.dispatch("MESSAGE_CREATE", msg);
    await h.discord.waitFor(() => contents(h!).includes("Got both."), 25_000, "answer");
    h.discord.dispatch("MESSAGE_CREATE", msg);
    h.ai.enqueue({ text: "Next." });
    send(h, "next", []);
    await h.discord.waitFor(() => contents(h!).includes("Next."), 25_000, "next answer");
    expect(h.discord.attachmentDownloads).toBe(2);
    expect(h.ai.requests).toHaveLength(2);
    expect(contents(h).filter((t) => t === "Got both.")).toHaveLength(1);
  });
});
