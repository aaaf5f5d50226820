/**
 * End to end: the Telegram channel against the fake Bot API server (real sockets), the real agent
 * host over the fake OpenAI server, real SQLite in a temp dir.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../../test/fakes/openai-server.js";
import {
  startFakeTelegram,
  type FakeTelegramServer,
  type FakeUser,
} from "../../../test/fakes/telegram-server.js";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { createModelRouter } from "../../models/router.js";
import { createAgentHost } from "../../agent/host.js";
import { ChannelRegistry } from "../registry.js";
import { createTelegramChannel, type TelegramChannel, type TelegramDeps } from "./telegram-channel.js";
import { markdownToTelegramHtml } from "./markdown-html.js";
import { PairingStore } from "../common/pairing.js";
import { PAIRING_WELCOME } from "../common/pairing-welcome.js";
import { NOT_AN_APPROVER } from "../../inbound/front-desk.js";
import type { ApprovalResolver } from "../../inbound/commands.js";
import { ApprovalManager } from "../../tools/approvals.js";
import { payloadHash } from "../../tools/approval-text.js";
import { freePort } from "../../../test/gateway/harness.js";
import { FakeClock, systemClock } from "../../core/clock.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
let core: TestCore | undefined;
const channels: TelegramChannel[] = [];

const owner: FakeUser = { id: 111, first_name: "Ann", username: "ann" };
const stranger: FakeUser = { id: 222, first_name: "Bob" };

beforeAll(async () => {
  llm = await startFakeOpenAI();
});
afterAll(async () => {
  await llm.close();
});
afterEach(async () => {
  for (const ch of channels.splice(0)) await ch.stop();
  await tg?.close();
  core?.close();
  core = undefined;
  llm.reset();
});

function config(tgExtra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    models: {
      providers: { a: { base_url: llm.baseUrl, api_key: "sk-a" } },
      primary: "a/m1",
      max_retries: 0,
      timeout_s: 10,
    },
    channels: {
      telegram: {
        enabled: true,
        token: tg.token,
        api_root: tg.apiRoot,
        dm_policy: "allowlist",
        allow_from: [owner.id],
        stream: { edit_interval_ms: 200 },
        ...tgExtra,
      },
    },
  };
}

let registry = new ChannelRegistry();

async function setup(
  tgExtra: Record<string, unknown> = {},
  reuse?: TestCore,
  approvals?: ApprovalResolver,
  retryLimits?: TelegramDeps["retryLimits"],
): Promise<TelegramChannel> {
  core = reuse ?? createTestCore(config(tgExtra));
  const c = core;
  const router = createModelRouter({
    config: () => c.ctx.config(),
    logger: c.ctx.logger,
    clock: c.ctx.clock,
  });
  const host = createAgentHost({ ctx: c.ctx, model: router });
  registry = new ChannelRegistry();
  const ch = createTelegramChannel(c.ctx, {
    host,
    registry,
    ...(approvals ? { approvals } : {}),
    ...(retryLimits ? { retryLimits } : {}),
  });
  registry.add(ch);
  channels.push(ch);
  await ch.start();
  await until(() => ch.status().state === "connected", "channel connected");
  return ch;
}

async function until(pred: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const botTexts = (chatId: number): string[] => tg.visible(chatId).map((m) => m.text);

describe("telegram channel (fake Bot API + fake model)", () => {
  // A fresh fake per test: state (messages, updates) never leaks between tests.
  beforeEach(async () => {
    tg = await startFakeTelegram();
  });

  it("answers a DM with one streamed, edited message and registers the commands", async () => {
    await setup();
    const answer = "Here is **the answer** you asked for, streamed in many small pieces so edits happen.";
    llm.enqueue({ text: answer, chunkSize: 4, delayMs: 40 });
    tg.pushText(owner, "hello");
    await tg.waitFor(
      () => tg.visible(owner.id).some((m) => m.text === markdownToTelegramHtml(answer)),
      20_000,
      "final",
    );
    const msgs = tg.visible(owner.id);
    expect(msgs).toHaveLength(1);
    expect(msgs[0]?.parseMode).toBe("HTML");
    expect(msgs[0]?.history.length).toBeGreaterThan(2);
    expect(tg.callsOf("sendChatAction").length).toBeGreaterThan(0);
    expect(tg.commands.map((c) => c.command)).toContain("stop");
    expect(llm.requests[0]?.body?.messages?.at(-1)?.content).toBe("hello");
  });

  it("pairs a stranger: code only, then answers after approval", async () => {
    const ch = await setup({ dm_policy: "pairing" });
    tg.pushText(stranger, "hi there");
    await tg.waitFor(() => botTexts(stranger.id).length === 1, 15_000, "pairing reply");
    const reply = botTexts(stranger.id)[0] ?? "";
    const code = /familiar pairing approve ([A-Z2-9]{8})/.exec(reply)?.[1];
    expect(code).toBeDefined();
    expect(llm.requests).toHaveLength(0);
    expect(ch.pairing.pending("telegram").map((p) => p.userId)).toEqual([String(stranger.id)]);
    // The owner approves from the CLI: a separate store over the same database.
    const approved = new PairingStore(core!.db, core!.ctx.clock).approve(code!.toLowerCase());
    expect(approved?.userId).toBe(String(stranger.id));
    // The channel finds the approval on its own (its sweep of the store) and tells the stranger once.
    await tg.waitFor(() => botTexts(stranger.id).includes(PAIRING_WELCOME), 15_000, "the welcome");
    expect(await ch.welcomePaired()).toBe(0);
    tg.pushText(stranger, "now?");
    await tg.waitFor(() => botTexts(stranger.id).includes("echo: now?"), 15_000, "answer after approval");
    expect(llm.requests).toHaveLength(1);
    expect(botTexts(stranger.id).filter((t) => t === PAIRING_WELCOME)).toHaveLength(1);
  });

  it("ignores a group message without a mention and answers one with a mention", async () => {
    await setup({ groups: ["*"] });
    const group = -100500;
    tg.pushGroupText(group, owner, "just chatting");
    tg.pushGroupText(group, owner, "@familiar_test_bot what is up?");
    await tg.waitFor(() => botTexts(group).includes("echo: what is up?"), 15_000, "group answer");
    expect(llm.requests).toHaveLength(1);
    expect(botTexts(group)).toEqual(["echo: what is up?"]);
  });

  it("keeps one session per forum topic; replies and later deliveries land in the topic", async () => {
    const ch = await setup({ groups: ["*"], require_mention: false });
    const forum = -100777;
    const topic = (id: number): Record<string, unknown> => ({
      is_topic_message: true,
      message_thread_id: id,
    });
    tg.pushGroupText(forum, owner, "topic A first", topic(11));
    await tg.waitFor(() => botTexts(forum).includes("echo: topic A first"), 15_000, "answer in A");
    tg.pushGroupText(forum, owner, "topic B first", topic(22));
    await tg.waitFor(() => botTexts(forum).includes("echo: topic B first"), 15_000, "answer in B");
    const inTopic = (text: string): number | undefined =>
      tg.visible(forum).find((m) => m.text === text)?.threadId;
    expect(inTopic("echo: topic A first")).toBe(11);
    expect(inTopic("echo: topic B first")).toBe(22);
    // Separate sessions: the model saw nothing of topic A while answering in topic B.
    const seen = JSON.stringify(llm.requests[1]?.body?.messages ?? []);
    expect(seen).toContain("topic B first");
    expect(seen).not.toContain("topic A first");
    // The session remembers its topic as the origin: a later delivery (approval, resumed turn,
    // async result) through the registry goes to the topic, not the forum's General.
    const origins = core!.db
      .prepare<[], { key: string; origin: string }>("SELECT key, origin FROM sessions ORDER BY created_at")
      .all();
    expect(origins.map((o) => o.key)).toEqual([
      `agent:main:telegram:group:${forum}:thread:11`,
      `agent:main:telegram:group:${forum}:thread:22`,
    ]);
    expect(origins.map((o) => o.origin)).toEqual([`telegram:${forum}:11`, `telegram:${forum}:22`]);
    await ch.send(`${forum}:11`, "later, for topic A");
    expect(inTopic("later, for topic A")).toBe(11);
  });

  it("sends approval buttons to the topic; only allowed users decide, by button or /approve", async () => {
    const approvals = new ApprovalManager({
      clock: systemClock,
      channels: { deliver: (t, x, o) => registry.deliver(t, x, o) },
      timeoutS: () => 60,
    });
    await setup({ groups: ["*"] }, undefined, approvals);
    const forum = -100888;
    const member: FakeUser = { id: 333, first_name: "Cid" };
    const decision = approvals.request({
      replyTarget: `telegram:${forum}:5`,
      sessionKey: "s",
      summary: "rm -rf /tmp/x",
    });
    await tg.waitFor(() => tg.visible(forum).length === 1, 15_000, "approval request");
    const req = tg.visible(forum)[0]!;
    expect(req.threadId).toBe(5);
    const id = /\/approve ([a-z0-9]+)/.exec(req.text)?.[1] ?? "";
    const [pending] = approvals.list();
    // The Approve button carries the first 12 hex digits of the hash of the payload it showed.
    const approve = `approve:${id}:${pending!.payloadHash.slice(0, 12)}`;
    expect(JSON.stringify(req.replyMarkup)).toContain(`"${approve}"`);
    // A group member who is not the owner: the button answers with the owner rule, the command is refused.
    tg.pushCallback(member, approve, req.messageId, { chatId: forum, threadId: 5 });
    await tg.waitFor(
      () => tg.callsOf("answerCallbackQuery").some((c) => c.params.text === NOT_AN_APPROVER.slice(0, 190)),
      15_000,
      "button refusal",
    );
    tg.pushGroupText(forum, member, `/approve ${id}`, { is_topic_message: true, message_thread_id: 5 });
    await tg.waitFor(() => botTexts(forum).includes(NOT_AN_APPROVER), 15_000, "command refusal");
    expect(approvals.list().map((a) => a.id)).toEqual([id]);
    // The owner decides with the button; the confirmation goes to the same topic.
    tg.pushCallback(owner, approve, req.messageId, { chatId: forum, threadId: 5 });
    expect(await decision).toBe("approved");
    await tg.waitFor(() => botTexts(forum).includes(`Approved ${id}.`), 15_000, "approved reply");
    expect(tg.visible(forum).find((m) => m.text === `Approved ${id}.`)?.threadId).toBe(5);
    // The settled question lost its buttons (the registry closes it where it was sent).
    await registry.closeApproval(id, "approved");
    const edit = tg
      .callsOf("editMessageText")
      .find((c) => String(c.params.message_id) === String(req.messageId));
    expect(String(edit?.params.text)).toContain("[approved]");
    expect(edit?.params.reply_markup).toBeUndefined();
    // A later /deny of the settled id by the owner: nothing pending any more.
    tg.pushGroupText(forum, owner, `/deny ${id}`, { is_topic_message: true, message_thread_id: 5 });
    await tg.waitFor(
      () => botTexts(forum).some((t) => t.startsWith(`No pending approval ${id}`)),
      15_000,
      "deny",
    );
  });

  it("a press carrying the hash of another payload settles nothing; the question's own button does", async () => {
    const approvals = new ApprovalManager({
      clock: systemClock,
      channels: { deliver: (t, x, o) => registry.deliver(t, x, o) },
      timeoutS: () => 60,
    });
    await setup({}, undefined, approvals);
    const decision = approvals.request({
      replyTarget: `telegram:${owner.id}`,
      sessionKey: "s",
      kind: "exec",
      summary: "$ ls ~/notes",
    });
    await tg.waitFor(() => tg.visible(owner.id).length === 1, 15_000, "approval request");
    const req = tg.visible(owner.id)[0]!;
    const [q] = approvals.list();
    const shown = q!.payloadHash.slice(0, 12);
    // What another question (another payload) would carry: the owner's press for it is not this one's.
    const other = payloadHash("exec", "$ curl evil.example");
    const forged = `approve:${q!.id}:${other.slice(0, 12)}`;
    expect(forged).not.toBe(`approve:${q!.id}:${shown}`);
    tg.pushCallback(owner, forged, req.messageId);
    await tg.waitFor(
      () => tg.callsOf("answerCallbackQuery").some((c) => /another payload/.test(String(c.params.text))),
      15_000,
      "the refusal of the forged press",
    );
    // An Approve without any hash is not a decision either (an old or hand-made button).
    tg.pushCallback(owner, `approve:${q!.id}`, req.messageId);
    await tg.waitFor(
      () => tg.callsOf("answerCallbackQuery").some((c) => c.params.text === "Unknown action"),
      15_000,
      "the bare press",
    );
    expect(approvals.list().map((a) => a.id)).toEqual([q!.id]);
    // The button the question carries settles it.
    expect(JSON.stringify(req.replyMarkup)).toContain(`"approve:${q!.id}:${shown}"`);
    tg.pushCallback(owner, `approve:${q!.id}:${shown}`, req.messageId);
    expect(await decision).toBe("approved");
    expect(approvals.list()).toEqual([]);
  });

  it("splits a 10,000-character answer with code blocks into valid chunks", async () => {
    await setup({ stream: { mode: "off" } });
    const para = (i: number): string => `Paragraph ${i}: ${"lorem ipsum dolor sit amet. ".repeat(12)}`;
    const code = (i: number): string =>
      "```python\n" +
      Array.from({ length: 30 }, (_, j) => `print("block ${i} line ${j}")  # x < y & z`).join("\n") +
      "\n```";
    let answer = "";
    for (let i = 0; answer.length < 10_000; i++) answer += `${para(i)}\n\n${code(i)}\n\n`;
    answer = answer.trim();
    llm.enqueue({ text: answer, chunkSize: 500 });
    tg.pushText(owner, "long please");
    await tg.waitFor(
      () =>
        tg.visible(owner.id).length >= 3 &&
        !tg.calls.some((c) => c.status !== 200 && c.method === "sendMessage"),
      20_000,
      "chunks",
    );
    await until(
      () => (llm.requests.length === 1 && tg.visible(owner.id).at(-1)?.text.includes("block")) ?? false,
      "last chunk",
    );
    await new Promise((r) => setTimeout(r, 300));
    const msgs = tg.visible(owner.id);
    expect(msgs.length).toBeGreaterThanOrEqual(3);
    for (const m of msgs) {
      expect(m.parseMode).toBe("HTML");
      // Every <pre> is closed within its own message (the fake validated the HTML too).
      expect((m.text.match(/<pre>|<pre><code/g) ?? []).length).toBe((m.text.match(/<\/pre>/g) ?? []).length);
    }
    const all = msgs.map((m) => m.text).join("\n");
    for (let i = 0; answer.includes(`block ${i} line 0`); i++) {
      for (let j = 0; j < 30; j++) expect(all).toContain(`print("block ${i} line ${j}")`);
    }
  });

  it("falls back to plain text when Telegram rejects the HTML", async () => {
    await setup({ stream: { mode: "off" } });
    tg.rejectHtml = () => true;
    const answer = "Some *markdown* that Telegram refuses to parse";
    llm.enqueue({ text: answer });
    tg.pushText(owner, "go");
    await tg.waitFor(() => botTexts(owner.id).includes(answer), 15_000, "plain fallback");
    const m = tg.visible(owner.id)[0];
    expect(m?.parseMode).toBeUndefined();
    expect(tg.callsOf("sendMessage").filter((c) => c.status === 400)).toHaveLength(1);
  });

  it("obeys a 429 storm on edits and delivers the final text exactly once", async () => {
    await setup();
    tg.failNext("editMessageText", { status: 429, retryAfter: 1 }, 3);
    const answer =
      "A streamed answer that needs several edits while Telegram keeps saying too many requests.";
    llm.enqueue({ text: answer, chunkSize: 3, delayMs: 30 });
    tg.pushText(owner, "storm");
    const final = markdownToTelegramHtml(answer);
    await tg.waitFor(() => tg.visible(owner.id).some((m) => m.text === final), 30_000, "final after storm");
    await new Promise((r) => setTimeout(r, 500));
    expect(tg.visible(owner.id).filter((m) => m.text === final)).toHaveLength(1);
    expect(tg.visible(owner.id)).toHaveLength(1);
    const edits = tg.callsOf("editMessageText");
    const limited = edits.filter((c) => c.status === 429);
    expect(limited).toHaveLength(3);
    // Each retry waited at least retry_after (1 s) after the 429.
    for (const l of limited) {
      const next = edits.find((c) => c.at > l.at);
      expect(next).toBeDefined();
      expect(next!.at - l.at).toBeGreaterThanOrEqual(900);
    }
  });

  it("waits out a long 429 on a new message, but gives up a rate-limited edit and sends anew", async () => {
    // Scaled down: edits give up beyond 1 s, new messages wait up to 5 s (defaults: 60 s and 600 s).
    await setup({}, undefined, undefined, { sendMaxDelayS: 5, otherMaxDelayS: 1 });
    tg.failNext("editMessageText", { status: 429, retryAfter: 2 }, 50);
    const answer = "An answer streamed in pieces while every edit is rate-limited for two seconds.";
    llm.enqueue({ text: answer, chunkSize: 6, delayMs: 60 });
    tg.pushText(owner, "edits are limited");
    const final = markdownToTelegramHtml(answer);
    await tg.waitFor(() => botTexts(owner.id).includes(final), 20_000, "final as a new message");
    await until(() => tg.visible(owner.id).length === 1, "preview deleted");
    expect(botTexts(owner.id)).toEqual([final]);
    expect(tg.callsOf("deleteMessage").filter((c) => c.status === 200)).toHaveLength(1);

    // A new message limited for 2 s is waited out and delivered once.
    tg.failNext("sendMessage", { status: 429, retryAfter: 2 }, 1);
    llm.enqueue({ text: "short" });
    tg.pushText(owner, "again");
    await tg.waitFor(() => botTexts(owner.id).includes("short"), 20_000, "delivered after the wait");
    const sends = tg.callsOf("sendMessage");
    const limited = sends.findIndex((c) => c.status === 429);
    expect(sends[limited + 1]!.at - sends[limited]!.at).toBeGreaterThanOrEqual(1900);
    expect(botTexts(owner.id).filter((t) => t === "short")).toHaveLength(1);
  });

  it("answers each update of a burst exactly once across a restart", async () => {
    const first = await setup();
    const users: FakeUser[] = Array.from({ length: 6 }, (_, i) => ({ id: 900 + i, first_name: `U${i}` }));
    core!.setConfig({ ...config({ dm_policy: "open" }) });
    for (const u of users.slice(0, 3)) tg.pushText(u, `burst ${u.id}`);
    await tg.waitFor(
      () => tg.callsOf("getUpdates").some((c) => Number(c.params.offset) > 0),
      15_000,
      "first batch",
    );
    // Stop while the burst is being answered; more updates arrive while the bot is down.
    await first.stop();
    channels.splice(channels.indexOf(first), 1);
    for (const u of users.slice(3)) tg.pushText(u, `burst ${u.id}`);
    await setup({}, core);
    for (const u of users)
      await tg.waitFor(() => botTexts(u.id).includes(`echo: burst ${u.id}`), 20_000, `answer to ${u.id}`);
    await new Promise((r) => setTimeout(r, 500));
    for (const u of users) expect(botTexts(u.id)).toEqual([`echo: burst ${u.id}`]);
    expect(llm.requests).toHaveLength(6);
  });

  it("answers the chat commands: /help /status /model /usage /whoami /compact /new /reset", async () => {
    await setup({ stream: { mode: "off" } });
    const ask = async (cmd: string, pred: (t: string) => boolean): Promise<string> => {
      const before = botTexts(owner.id).length;
      tg.pushText(owner, cmd);
      await tg.waitFor(() => botTexts(owner.id).slice(before).some(pred), 15_000, `reply to ${cmd}`);
      return botTexts(owner.id).slice(before).find(pred) ?? "";
    };
    expect(await ask("/help", (t) => t.startsWith("Commands:"))).toContain("/compact ");
    tg.pushText(owner, "first question");
    await tg.waitFor(() => botTexts(owner.id).includes("echo: first question"), 15_000, "answer");
    const status = await ask("/status", (t) => t.startsWith("Agent:"));
    expect(status).toMatch(/Model: a\/m1\n/);
    expect(status).toMatch(/Session: 2 messages/);
    expect(status).toMatch(/Uptime: /);
    // A provider that does not exist is refused with the configured list; the chat's model stays.
    expect(await ask("/model nosuch/gpt-4o", (t) => t.startsWith("Model not changed"))).toBe(
      'Model not changed: unknown provider "nosuch"; configured: a (m1).\n' +
        "Usage: /model <provider>/<model> (or /model default)",
    );
    expect(await ask("/status", (t) => t.startsWith("Agent:"))).toMatch(/Model: a\/m1\n/);
    expect(await ask("/model a/m2", (t) => t.startsWith("Model for this chat"))).toBe(
      "Model for this chat: a/m2",
    );
    tg.pushText(owner, "second question");
    await tg.waitFor(() => botTexts(owner.id).includes("echo: second question"), 15_000, "answer 2");
    expect(llm.requests.at(-1)?.model).toBe("m2");
    expect(await ask("/usage", (t) => t.startsWith("Today:"))).toMatch(/over 2 model calls/);
    expect(await ask("/whoami", (t) => t.startsWith("You:"))).toContain(
      `Session: agent:main:telegram:dm:${owner.id}`,
    );
    expect(await ask("/compact keep names", (t) => /compact/i.test(t))).toMatch(/^(Compacted|\/compact)/);
    expect(await ask("/new", (t) => t === "Started a new conversation.")).toBeTruthy();
    expect(await ask("/status", (t) => t.startsWith("Agent:"))).toMatch(/Session: 0 messages/);
    expect(await ask("/reset", (t) => t === "Started a new conversation.")).toBeTruthy();
    expect(await ask("/model default", (t) => t.startsWith("Model reset"))).toContain("a/m1");
    // Commands never reach the model.
    expect(llm.requests).toHaveLength(2);
  });

  it("/stop aborts the running turn", async () => {
    await setup();
    llm.enqueue({ hang: true, text: "I am thinking about this for a long time" });
    tg.pushText(owner, "take your time");
    await tg.waitFor(() => tg.visible(owner.id).length === 1, 15_000, "preview");
    tg.pushText(owner, "/stop");
    await tg.waitFor(() => botTexts(owner.id).includes("Stopped."), 15_000, "stopped reply");
    await until(() => !tg.visible(owner.id).some((m) => m.text.includes("…")), "preview settled");
    expect(botTexts(owner.id)[0]).toContain("I am thinking");
  });

  it("passes a photo to the model as an image part", async () => {
    await setup();
    const bytes = Buffer.from("fake-jpeg-bytes-\u00ff\u00d8");
    const fileId = tg.addFile(bytes);
    tg.pushPhoto(owner, fileId, "what is this?");
    await tg.waitFor(() => tg.visible(owner.id).length === 1, 15_000, "photo answer");
    await until(() => llm.requests.length === 1, "model request");
    const content = llm.requests[0]?.body?.messages?.at(-1)?.content as {
      type: string;
      image_url?: { url: string };
      text?: string;
    }[];
    expect(content.find((p) => p.type === "text")?.text).toBe("what is this?");
    expect(content.find((p) => p.type === "image_url")?.image_url?.url).toBe(
      `data:image/jpeg;base64,${bytes.toString("base64")}`,
    );
  });

  it("says voice needs transcription configured, saves other files with media.save, and refuses big images", async () => {
    await setup({ stream: { mode: "off" } });
    const audio = Buffer.from("OggS-fake-voice");
    const voiceId = tg.addFile(audio, "voice/file_1.oga");
    tg.pushVoice(owner, voiceId);
    await tg.waitFor(() => botTexts(owner.id).length === 1, 15_000, "not supported reply");
    expect(botTexts(owner.id)[0]).toContain("set media.transcription.provider");
    expect(llm.requests).toHaveLength(0);

    // media.save is read live: turned on by a reload, the next video message is saved and described.
    core!.setConfig(config({ stream: { mode: "off" }, media: { save: true, max_image_bytes: 1000 } }));
    tg.pushUpdate({
      message: {
        message_id: 900,
        date: Math.floor(Date.now() / 1000),
        chat: { id: owner.id, type: "private", first_name: owner.first_name },
        from: { ...owner, is_bot: false },
        video: {
          file_id: voiceId,
          file_unique_id: `${voiceId}u`,
          width: 1,
          height: 1,
          duration: 1,
          mime_type: "audio/ogg",
        },
      },
    });
    await until(() => llm.requests.length === 1, "model request for the saved voice");
    const said = String(llm.requests[0]?.body?.messages?.at(-1)?.content ?? "");
    const rel = /saved in the workspace at (\S+) \(audio\/ogg\)/.exec(said)?.[1] ?? "";
    expect(rel).toMatch(/^inbox\/telegram\/\d{4}-\d{2}-\d{2}\//);
    expect(readFileSync(join(core!.ctx.config().workspace, rel))).toEqual(audio);

    // An image above max_image_bytes gets a clear reply and never reaches the model.
    const big = tg.addFile(Buffer.alloc(10, 1));
    tg.pushPhoto(owner, big, "look", 5000);
    await tg.waitFor(
      () => botTexts(owner.id).some((t) => t.startsWith("The image is too large")),
      15_000,
      "too large",
    );
    expect(llm.requests).toHaveLength(1);
  });

  it("webhook mode: checks the secret token, stores the update before the 200, answers a redelivery once", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/tg-hook`;
    const ch = await setup({ webhook: { url, secret: "s3cret-token", listen: `127.0.0.1:${port}` } });
    expect(ch.status().detail).toBe(`webhook ${url}`);
    const set = tg.callsOf("setWebhook")[0];
    expect(set?.params).toMatchObject({ url, secret_token: "s3cret-token" });
    expect(tg.callsOf("getUpdates")).toHaveLength(0);
    const update = {
      update_id: 5001,
      message: {
        message_id: 1,
        date: Math.floor(Date.now() / 1000),
        chat: { id: owner.id, type: "private", first_name: owner.first_name },
        from: owner,
        text: "via webhook",
      },
    };
    const post = (secret: string | undefined, body: unknown = update): Promise<Response> =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(secret ? { "x-telegram-bot-api-secret-token": secret } : {}),
        },
        body: JSON.stringify(body),
      });
    expect((await post(undefined)).status).toBe(401);
    expect((await post("wrong")).status).toBe(401);
    expect((await post("s3cret-token", { nope: true })).status).toBe(400);
    expect(llm.requests).toHaveLength(0);
    expect((await post("s3cret-token")).status).toBe(200);
    // Stored before the 200 went back: a crash now would still answer it after the restart.
    const row = core!.db
      .prepare<[number], { n: number }>("SELECT COUNT(*) AS n FROM telegram_updates WHERE update_id = ?")
      .get(5001);
    expect(row?.n).toBe(1);
    // Telegram redelivers when it missed our 200: answered once.
    expect((await post("s3cret-token")).status).toBe(200);
    await tg.waitFor(() => botTexts(owner.id).includes("echo: via webhook"), 15_000, "answer");
    await new Promise((r) => setTimeout(r, 300));
    expect(botTexts(owner.id)).toEqual(["echo: via webhook"]);
    expect(llm.requests).toHaveLength(1);
  });

  it("restarts a stalled long poll after poll_stall_s and answers what waited", async () => {
    const clock = new FakeClock(Date.now());
    core = createTestCore(config({ poll_stall_s: 5, stream: { mode: "off" } }), { clock });
    tg.stallPolls(1);
    const ch = await setup({}, core);
    await tg.waitFor(() => tg.stalledPolls === 1, 15_000, "a stalled poll");
    tg.pushText(owner, "are you there?");
    await new Promise((r) => setTimeout(r, 300));
    expect(botTexts(owner.id)).toEqual([]);
    // Nothing for poll_stall_s: the channel gives up on that poll and polls again.
    await clock.advance(5000);
    await tg.waitFor(() => tg.abandonedStalls === 1, 15_000, "the stalled poll abandoned");
    await tg.waitFor(() => botTexts(owner.id).includes("echo: are you there?"), 15_000, "answer");
    expect(ch.status().state).toBe("connected");
    expect(botTexts(owner.id)).toEqual(["echo: are you there?"]);
  });

  it("announces each state change on the bus, so live clients (the console) follow it", async () => {
    const c = createTestCore(config());
    const seen: { channel: string; state: string }[] = [];
    c.ctx.bus.on("channel.state", (e) => seen.push({ channel: e.channel, state: e.state }));
    const ch = await setup({}, c);
    expect(seen).toContainEqual({ channel: "telegram", state: "connected" });
    const before = seen.length;
    await ch.stop();
    expect(seen.slice(before)).toContainEqual({ channel: "telegram", state: "stopped" });
  });

  it("stops with one clear error on a rejected token and keeps the process alive", async () => {
    core = createTestCore(config({ token: "999:wrong" }));
    const c = core;
    const host = createAgentHost({
      ctx: c.ctx,
      model: createModelRouter({ config: () => c.ctx.config(), logger: c.ctx.logger }),
    });
    const ch = createTelegramChannel(c.ctx, { host });
    channels.push(ch);
    await ch.start();
    await until(() => ch.status().state === "error", "error state");
    expect(ch.status().detail).toMatch(/rejected the bot token.*channels\.telegram\.token/);
    await expect(ch.send(String(owner.id), "hi")).rejects.toMatchObject({ code: "CHANNEL_NOT_RUNNING" });
  });
});
