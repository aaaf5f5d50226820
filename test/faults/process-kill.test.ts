/**
 * Fault injection, process: the real daemon (a child process) is killed with SIGKILL in the middle of
 * 50 concurrent websocket turns (the fake model is slow), Telegram updates and an async subagent task,
 * then restarted on the same data dir. Invariants checked:
 * - every message the gateway acknowledged (`chat.send` answered `started`) is in the store;
 * - the store is not corrupted (`PRAGMA integrity_check`);
 * - the sessions continue: a new turn works and the model sees the old user message in its history;
 * - no Telegram update is answered twice or skipped across the restart;
 * - the async subagent task is marked `interrupted` and reported to the session that started it.
 */
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import {
  lastUserOf as lastUser,
  startFakeOpenAI,
  type FakeOpenAI,
  type RecordedRequest,
} from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "../fakes/telegram-server.js";
import { cleanupDaemons, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";
import { waitFor } from "../gateway/harness.js";

const TOKEN = "kill-test-token-0123456789";
const TURNS = 50;

let fake: FakeOpenAI | undefined;
let tg: FakeTelegramServer | undefined;
afterAll(async () => {
  await cleanupDaemons();
  await fake?.close();
  await tg?.close();
});

function hasToolResult(req: RecordedRequest): boolean {
  return (req.body?.messages ?? []).at(-1)?.role === "tool";
}

async function connect(d: DaemonProcess, events: ChatEventPayload[]): Promise<GatewayClient> {
  const c = await GatewayClient.connect({
    url: `ws://127.0.0.1:${d.port}/ws`,
    token: TOKEN,
    clientName: "kill",
  });
  c.on("chat", (p) => events.push(p as ChatEventPayload));
  return c;
}

describe("kill -9 in the middle of 50 concurrent turns", () => {
  it("keeps every acknowledged message, continues sessions, answers Telegram once and reports the task", async () => {
    const llm = await startFakeOpenAI();
    fake = llm;
    const bot = await startFakeTelegram();
    tg = bot;
    let slow = true;
    llm.setHandler((req) => {
      const text = lastUser(req);
      if (text === "start a background job" && !hasToolResult(req))
        return {
          toolCalls: [
            { name: "delegate", arguments: { agent: "helper", message: "background job", mode: "async" } },
          ],
        };
      // The subagent's turn hangs until the process dies.
      if (text === "background job" && slow) return { hang: true };
      return { text: `echo: ${text}`, chunkSize: 3, delayMs: slow ? 120 : 0 };
    });

    const config = {
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk-fake" } },
        primary: "fake/slow",
        max_retries: 0,
        timeout_s: 60,
      },
      agents: { max_concurrent: 8, helper: { system_prompt: "You run background jobs." } },
      gateway: { token: TOKEN },
      channels: {
        telegram: {
          enabled: true,
          token: bot.token,
          api_root: bot.apiRoot,
          dm_policy: "open",
          stream: { mode: "off" },
        },
      },
    };
    const first = await startDaemonProcess({ config });
    const events: ChatEventPayload[] = [];
    const c1 = await connect(first, events);

    // The background task first, so it is running when the process dies.
    const bg = await c1.request<{ status: string }>("chat.send", {
      sessionKey: "bg",
      message: "start a background job",
    });
    expect(bg.status).toBe("started");
    await waitFor(() => llm.requests.some((r) => lastUser(r) === "background job"), 20_000);

    // Telegram updates from six users, and 50 websocket turns in 50 sessions, all at once.
    const users: FakeUser[] = Array.from({ length: 6 }, (_, i) => ({ id: 5000 + i, first_name: `U${i}` }));
    for (const u of users) bot.pushText(u, `telegram ${u.id}`);
    const acked = new Set<number>();
    const sends = Array.from({ length: TURNS }, (_, i) =>
      c1
        .request<{ status: string }>("chat.send", { sessionKey: `k${i}`, message: `turn ${i}` })
        .then((r) => {
          if (r.status === "started") acked.add(i);
        })
        .catch(() => undefined),
    );
    // Kill once some turns have finished and many are still queued or streaming.
    await waitFor(() => events.filter((e) => e.state === "final").length >= 8, 30_000);
    const finishedBefore = events.filter((e) => e.state === "final").length;
    expect((await first.kill9()).signal).toBe("SIGKILL");
    await Promise.all(sends);
    await c1.close().catch(() => undefined);
    expect(finishedBefore).toBeLessThan(TURNS);
    expect(acked.size).toBeGreaterThan(finishedBefore);

    // The store as the dead process left it: intact, and holding every acknowledged message.
    const undelivered = new Set<string>();
    const db = new Database(join(first.dataDir, "familiar.db"));
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      const rows = db
        .prepare<[], { key: string; content: string }>(
          `SELECT s.key AS key, m.content AS content FROM messages m JOIN sessions s ON s.id = m.session_id
           WHERE m.role = 'user'`,
        )
        .all();
      const stored = new Set(rows.map((r) => `${r.key}|${r.content}`));
      for (const i of acked) expect(stored.has(`agent:main:gateway:k${i}|turn ${i}`)).toBe(true);
      const task = db
        .prepare<[], { status: string }>("SELECT status FROM subagent_tasks WHERE agent_id = 'helper'")
        .all();
      expect(task.map((t) => t.status)).toEqual(["running"]);
      // Telegram chats whose final answer was still marked undelivered when the process died.
      for (const r of db
        .prepare<[], { chat: string }>("SELECT chat FROM chat_deliveries WHERE channel = 'telegram'")
        .all())
        undelivered.add(r.chat);
    } finally {
      db.close();
    }

    // Restart on the same data dir; the model is fast now.
    slow = false;
    const answeredBefore = new Map(users.map((u) => [u.id, botTexts(bot, u.id).length]));
    const second = await startDaemonProcess({ dir: first.dir, port: first.port, config });
    const events2: ChatEventPayload[] = [];
    const c2 = await connect(second, events2);
    try {
      // The subagent task is interrupted and the session that started it is told.
      const hist = async (key: string): Promise<{ role: string; content: string; status: string }[]> =>
        (
          await c2.request<{ messages: { role: string; content: string; status: string }[] }>(
            "chat.history",
            { sessionKey: key },
          )
        ).messages;
      await waitFor(
        async () =>
          (await hist("bg")).some((m) => m.role === "event" && /status interrupted/.test(m.content)),
        20_000,
      );

      // Interrupted turns are answered after the restart: every acknowledged message exactly once.
      for (const i of acked)
        await waitFor(
          async () =>
            (await hist(`k${i}`)).some((m) => m.role === "assistant" && m.content === `echo: turn ${i}`),
          20_000,
        );
      for (const i of acked) {
        const answers = (await hist(`k${i}`)).filter((m) => m.role === "assistant");
        expect(answers.map((m) => m.content)).toEqual([`echo: turn ${i}`]);
      }

      // Sessions continue: a new turn sees the old user message.
      const sample = [...acked].slice(0, 10);
      for (const i of sample) {
        llm.reset();
        llm.setHandler((req) => ({ text: `echo: ${lastUser(req)}` }));
        const r = await c2.request<{ result: { text: string; finishReason: string } }>("chat.send", {
          sessionKey: `k${i}`,
          message: `again ${i}`,
          wait: true,
        });
        expect(r.result).toMatchObject({ text: `echo: again ${i}`, finishReason: "stop" });
        const req = llm.requests.find((q) => lastUser(q) === `again ${i}`);
        const sent = (req?.body?.messages ?? []).map((m) => m.content);
        expect(sent).toContain(`turn ${i}`);
        const h = await hist(`k${i}`);
        expect(h.filter((m) => m.role === "user").map((m) => m.content)).toEqual([`turn ${i}`, `again ${i}`]);
        expect(h.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual([
          `echo: turn ${i}`,
          `echo: again ${i}`,
        ]);
      }

      // Telegram: every update is answered exactly once, across both processes.
      for (const u of users)
        await bot.waitFor(() => botTexts(bot, u.id).length >= 1, 20_000, `an answer to ${u.id}`);
      await new Promise((r) => setTimeout(r, 1000));
      for (const u of users) {
        const texts = botTexts(bot, u.id);
        const once = [`echo: telegram ${u.id}`];
        // The one instant delivery-ledger.ts names: Telegram had accepted the answer but the process
        // died before it marked it delivered. Sent again rather than lost; nothing else repeats.
        const inTheWindow = answeredBefore.get(u.id) === 1 && undelivered.has(String(u.id));
        const allowed = inTheWindow ? [once, [...once, ...once]] : [once];
        expect(allowed, `answers to ${u.id} (before restart: ${answeredBefore.get(u.id)})`).toContainEqual(
          texts,
        );
      }
    } finally {
      await c2.close().catch(() => undefined);
      await second.stop();
    }
  }, 120_000);
});

describe("a crash loop", () => {
  it("kill -9 again while interrupted turns are being answered: each is still answered exactly once", async () => {
    const llm = fake ?? (await startFakeOpenAI());
    fake = llm;
    llm.reset();
    let delayMs = 150;
    llm.setHandler((req) => ({ text: `echo: ${lastUser(req)}`, chunkSize: 3, delayMs }));
    const config = {
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk-fake" } },
        primary: "fake/slow",
        max_retries: 0,
        timeout_s: 60,
      },
      agents: { max_concurrent: 2 },
      gateway: { token: TOKEN },
    };
    const N = 12;
    const first = await startDaemonProcess({ config });
    const events: ChatEventPayload[] = [];
    const c1 = await connect(first, events);
    for (let i = 0; i < N; i++)
      expect(
        (await c1.request<{ status: string }>("chat.send", { sessionKey: `loop${i}`, message: `m${i}` }))
          .status,
      ).toBe("started");
    await waitFor(() => events.some((e) => e.state === "final"), 20_000);
    await first.kill9();
    await c1.close().catch(() => undefined);

    // Second life: the resumed turns run (slowly) and the process dies again among them.
    llm.reset();
    llm.setHandler((req) => ({ text: `echo: ${lastUser(req)}`, chunkSize: 3, delayMs }));
    const second = await startDaemonProcess({ dir: first.dir, port: first.port, config });
    await waitFor(() => llm.requests.length >= 3, 20_000);
    await second.kill9();

    // Third life, fast model: everything is answered, once.
    delayMs = 0;
    const third = await startDaemonProcess({ dir: first.dir, port: first.port, config });
    const c3 = await connect(third, []);
    try {
      const answers = async (i: number): Promise<string[]> =>
        (
          await c3.request<{ messages: { role: string; content: string }[] }>("chat.history", {
            sessionKey: `loop${i}`,
          })
        ).messages
          .filter((m) => m.role === "assistant")
          .map((m) => m.content);
      for (let i = 0; i < N; i++) await waitFor(async () => (await answers(i)).length > 0, 20_000);
      await new Promise((r) => setTimeout(r, 500));
      for (let i = 0; i < N; i++) expect(await answers(i), `session loop${i}`).toEqual([`echo: m${i}`]);
    } finally {
      await c3.close().catch(() => undefined);
      await third.stop();
    }
  }, 120_000);
});

function botTexts(bot: FakeTelegramServer, chatId: number): string[] {
  return bot.visible(chatId).map((m) => m.text);
}
