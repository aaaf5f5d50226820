/**
 * An approval question on Telegram through the real daemon (`familiar run` child process, the fake
 * Bot API, the fake model asking for `write_file desk/.envrc`, which asks even in the sandbox):
 * while the turn waits for the owner the chat shows no "typing…"; the Approve button carries the
 * hash of what the question showed and a press with another hash settles nothing; once the question
 * is answered or expired its buttons are gone and the message says how it ended, even when the
 * first closing edit is lost on the network.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "./fakes/telegram-server.js";
import { cleanupDaemons, type DaemonProcess } from "./helpers/daemon.js";
import { startTelegramDaemon } from "./helpers/telegram-daemon.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
let d: DaemonProcess;
const owner: FakeUser = { id: 4242, first_name: "Ann" };
/** Longer than the typing indicator's 4 s renewal: a renewal while waiting would show. */
const APPROVAL_TIMEOUT_S = 6;

beforeAll(async () => {
  llm = await startFakeOpenAI();
  tg = await startFakeTelegram();
  d = await startTelegramDaemon(llm, tg, {
    telegram: { allow_from: [owner.id] },
    config: { tools: { exec: { approval_timeout_s: APPROVAL_TIMEOUT_S } } },
  });
}, 90_000);
afterAll(async () => {
  await cleanupDaemons();
  await tg.close();
  await llm.close();
});
afterEach(() => llm.reset());

const texts = (): string[] => tg.visible(owner.id).map((m) => m.text);
const envrc = (): string => join(d.workspace, "desk", ".envrc");

/** The owner asks for `.envrc`; resolves with the question message and where it is in the call log. */
async function ask(content: string, answer: string) {
  llm.enqueue(
    { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content } }] },
    { text: answer },
  );
  const before = tg.visible(owner.id).length;
  const start = tg.calls.length;
  tg.pushText(owner, "write my .envrc");
  await tg.waitFor(
    () =>
      tg
        .visible(owner.id)
        .slice(before)
        .some((m) => m.text.startsWith("Approval needed")),
    30_000,
    "the question",
  );
  const q = tg.visible(owner.id).find((m, i) => i >= before && m.text.startsWith("Approval needed"))!;
  const asked =
    start +
    tg.calls
      .slice(start)
      .findIndex((c) => c.method === "sendMessage" && String(c.params.text).startsWith("Approval needed"));
  const rows = (q.replyMarkup as { inline_keyboard: { callback_data: string }[][] }).inline_keyboard;
  return { q, asked, approve: rows[0]![0]!.callback_data };
}

/** `sendChatAction` calls after position `from` of the call log (and before `to`). */
const typingBetween = (from: number, to = tg.calls.length): number =>
  tg.calls.slice(from, to).filter((c) => c.method === "sendChatAction").length;

describe("a Telegram approval question in the running daemon", () => {
  it("no typing while it waits; expired, it loses its buttons and says so", async () => {
    // The first closing edit dies on the network (a server closing an idle keep-alive connection as
    // the client reuses it, which lost this edit under load): an edit is sent again, a send never.
    tg.failNext("editMessageText", { status: 0, drop: true });
    const { q, asked } = await ask("export A=1\n", "gave up");
    await tg.waitFor(() => q.text.includes("[expired"), 30_000, "the expiry edit");
    expect(tg.callsOf("editMessageText").map((c) => c.status)).toEqual([0, 200]);
    // While it waited: from the question to a second before it expired (a renewal of "typing…"
    // would come 4 s in). From the expiry on the turn goes on and types again, before or after the
    // closing edit: both are right.
    const askedAt = tg.calls[asked]!.at;
    const typingWhileWaiting = tg
      .callsOf("sendChatAction")
      .filter((c) => c.at > askedAt && c.at < askedAt + (APPROVAL_TIMEOUT_S - 1) * 1000);
    expect(typingWhileWaiting).toEqual([]);
    expect(q.replyMarkup).toBeUndefined();
    expect(q.text).toContain("[expired: no answer in time, not done]");
    await tg.waitFor(() => texts().includes("gave up"), 30_000, "the answer after the expiry");
    expect(existsSync(envrc())).toBe(false);
  }, 60_000);

  it("a press with another payload's hash settles nothing; the question's own Approve does", async () => {
    const { q, asked, approve } = await ask("export B=2\n", "Written.");
    const m = /^approve:([a-z0-9]+):([0-9a-f]{12})$/.exec(approve);
    expect(m).not.toBeNull();
    const forged = `approve:${m![1]}:${"0".repeat(12)}`;
    tg.pushCallback(owner, forged, q.messageId);
    await tg.waitFor(
      () => tg.callsOf("answerCallbackQuery").some((c) => /another payload/.test(String(c.params.text))),
      15_000,
      "the refusal",
    );
    expect(q.replyMarkup).toBeDefined();
    expect(existsSync(envrc())).toBe(false);
    const pressed = tg.calls.length;
    expect(typingBetween(asked, pressed)).toBe(0);
    tg.pushCallback(owner, approve, q.messageId);
    await tg.waitFor(() => texts().includes("Written."), 30_000, "the answer");
    expect(readFileSync(envrc(), "utf8")).toBe("export B=2\n");
    await tg.waitFor(() => q.text.includes("[approved]"), 15_000, "the closing edit");
    expect(q.replyMarkup).toBeUndefined();
    // The turn went on after the answer: "typing…" again until the reply.
    expect(typingBetween(pressed)).toBeGreaterThan(0);
  }, 60_000);
});
