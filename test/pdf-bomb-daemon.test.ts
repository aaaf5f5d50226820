/**
 * Issue 32: a 66 KB PDF used to freeze the whole daemon for minutes. Here a real `familiar run`
 * child gets the bomb (100 pages sharing one 21 MB content stream) as a Telegram document while a
 * test polls `/healthz` and another user writes: every poll is answered, Telegram polling goes on
 * (the other message is fetched while the bomb is still being read, and answered), and the bomb gets
 * one clear reply while its caption still reaches the model. Nothing here asserts a time; the generous per-poll timeout only tells a
 * frozen daemon (which would not answer for minutes) from a live one.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "./fakes/telegram-server.js";
import { cleanupDaemons, startDaemonProcess } from "./helpers/daemon.js";
import { pdfBomb } from "./helpers/pdf-bomb.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
const owner: FakeUser = { id: 4242, first_name: "Ann" };
const friend: FakeUser = { id: 4343, first_name: "Bo" };

beforeAll(async () => {
  llm = await startFakeOpenAI();
  tg = await startFakeTelegram();
});
afterAll(async () => {
  await tg.close();
  await llm.close();
});
afterEach(async () => {
  await cleanupDaemons();
});

const texts = (chatId: number): string[] => tg.visible(chatId).map((m) => m.text);

describe("a PDF bomb sent to the running daemon", () => {
  it("is read in a bounded child: /healthz answers every poll and another chat is answered meanwhile", async () => {
    const d = await startDaemonProcess({
      config: {
        models: {
          providers: { fake: { base_url: llm.baseUrl, api_key: "sk-test" } },
          primary: "fake/m",
          max_retries: 0,
        },
        media: { documents: { parse_timeout_s: 20, parse_memory_mb: 2048 } },
        channels: {
          telegram: {
            enabled: true,
            token: tg.token,
            api_root: tg.apiRoot,
            dm_policy: "allowlist",
            allow_from: [owner.id, friend.id],
            stream: { mode: "off" },
          },
        },
      },
    });
    let state = "";
    for (let i = 0; i < 300 && state !== "connected"; i++) {
      const health = (await (await fetch(`${d.url}/healthz`)).json()) as {
        channels: Record<string, { state: string }>;
      };
      state = health.channels.telegram?.state ?? "";
      if (state !== "connected") await new Promise((r) => setTimeout(r, 50));
    }
    expect(state).toBe("connected");

    const bomb = pdfBomb();
    expect(bomb.length).toBeLessThan(100 * 1024);
    const fileId = tg.addFile(bomb, "documents/bomb.pdf");
    llm.setHandler((req) =>
      JSON.stringify(req.body).includes("are you there?")
        ? { text: "Hello Bo, I am here." }
        : { text: "That PDF could not be read, sorry." },
    );
    tg.pushDocument(owner, fileId, { name: "bomb.pdf", mime: "application/pdf", caption: "what is this?" });

    // Poll /healthz until the bomb's reply arrives; every poll must be answered.
    let polls = 0;
    let failed = 0;
    let stop = false;
    const poller = (async () => {
      while (!stop) {
        try {
          const r = await fetch(`${d.url}/healthz`, { signal: AbortSignal.timeout(15_000) });
          if (r.status === 200) polls++;
          else failed++;
        } catch {
          failed++;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    // The friend writes while the reader child is at work. Telegram updates are handled in arrival
    // order, so the answer comes once the bomb is dealt with; but the daemon keeps polling meanwhile:
    // it fetches the friend's message before the bomb's reply goes out.
    for (let i = 0; polls < 3 && i < 600; i++) await new Promise((r) => setTimeout(r, 50));
    const friendUpdate = tg.pushText(friend, "are you there?");
    await tg.waitFor(() => texts(friend.id).includes("Hello Bo, I am here."), 120_000, "friend answered");
    await tg.waitFor(
      () => texts(owner.id).some((t) => /That PDF could not be read/.test(t)),
      120_000,
      "bomb handled",
    );
    stop = true;
    await poller;

    // The poll that delivered the friend's message (its offset is that update's id).
    const fetched = tg.calls.findIndex(
      (c) => c.method === "getUpdates" && Number((c.params as { offset?: number }).offset) === friendUpdate,
    );
    const refused = tg.calls.findIndex(
      (c) =>
        c.method === "sendMessage" && /stopped reading/.test(String((c.params as { text?: string }).text)),
    );
    expect(fetched).toBeGreaterThan(-1);
    expect(refused).toBeGreaterThan(fetched);
    expect(failed).toBe(0);
    expect(polls).toBeGreaterThan(3);
    const refusals = texts(owner.id).filter((t) => /bomb\.pdf/.test(t));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(
      /I stopped reading the PDF "bomb\.pdf": it (took longer than 20 s|needed more than \d+ MB)/,
    );
    // The caption went on to the model, with a note that the file was not read.
    const last = JSON.stringify(llm.requests.find((r) => JSON.stringify(r.body).includes("what is this?")));
    expect(last).toContain("what is this?");
    expect(last).toContain("which was not read");
    // And the daemon is still fine.
    expect((await fetch(`${d.url}/healthz`)).status).toBe(200);
  }, 240_000);
});
