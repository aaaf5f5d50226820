/**
 * Fault injection, model side: the fake OpenAI server answers 429s with `retry-after`, 500s, hangs past
 * the timeout, malformed and truncated streams and a context-overflow error, and the request goes
 * through the running daemon's `/v1/chat/completions` (persistent session, so the store is checked
 * too). Invariants: the user gets the answer (retry or fallback) or exactly one clear error; the
 * daemon keeps serving; nothing is answered twice (one assistant answer per turn, one finish chunk).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { contextOverflowStep, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import type { AgentHostImpl } from "../../internal/agent/host.js";
import type { StoredMessage } from "../../internal/session/session-store.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";

let fake: FakeOpenAI;
let h: GatewayHarness;
let n = 0;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake,
    config: {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
        primary: "fake/primary",
        fallbacks: ["fake/backup"],
        max_retries: 1,
        timeout_s: 1,
      },
    },
  });
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.reset();
  routerOf().clearCooldown();
});

interface RouterLike {
  clearCooldown(model?: string): void;
  cooldowns(): { model: string; remainingMs: number }[];
}
function routerOf(): RouterLike {
  return h.daemon.parts.router;
}
function host(): AgentHostImpl {
  return h.daemon.parts.host as AgentHostImpl;
}

/** A fresh persistent session name per test, so store assertions see only this turn. */
function session(): string {
  return `faults-${++n}`;
}

function stored(name: string): StoredMessage[] {
  const head = host().sessions.head(`agent:main:gateway:${name}`);
  return head ? host().sessions.messages(head.id) : [];
}

async function ask(
  name: string,
  text: string,
  stream: boolean,
): Promise<{ status: number; json?: Record<string, unknown>; events?: Record<string, unknown>[] }> {
  const res = await fetch(`${h.base}/v1/chat/completions`, {
    method: "POST",
    headers: h.headers({ "x-familiar-session": name }),
    body: JSON.stringify({ model: "familiar", stream, messages: [{ role: "user", content: text }] }),
  });
  if (!stream || res.headers.get("content-type")?.includes("application/json"))
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  const body = await res.text();
  const events = body
    .split("\n\n")
    .map((b) => b.trim())
    .filter((b) => b.startsWith("data: ") && b !== "data: [DONE]")
    .map((b) => JSON.parse(b.slice(6)) as Record<string, unknown>);
  expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
  return { status: res.status, events };
}

function streamedText(events: Record<string, unknown>[]): string {
  let s = "";
  for (const e of events) {
    const c = (e.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content;
    if (c) s += c;
  }
  return s;
}
function finishes(events: Record<string, unknown>[]): unknown[] {
  return events
    .map((e) => (e.choices as { finish_reason?: unknown }[] | undefined)?.[0]?.finish_reason)
    .filter((f) => f !== null && f !== undefined);
}
function errors(events: Record<string, unknown>[]): unknown[] {
  return events.filter((e) => "error" in e);
}
function content(json: Record<string, unknown> | undefined): unknown {
  return (json?.choices as { message?: { content?: unknown } }[] | undefined)?.[0]?.message?.content;
}

/** Exactly one user message and one final assistant message were stored for the turn. */
function expectOneTurn(name: string, userText: string, status: "ok" | "error"): StoredMessage {
  const msgs = stored(name);
  expect(msgs.filter((m) => m.role === "user").map((m) => m.content)).toEqual([userText]);
  const answers = msgs.filter((m) => m.role === "assistant");
  expect(answers).toHaveLength(1);
  expect(answers[0]!.status).toBe(status);
  return answers[0]!;
}

async function stillServing(): Promise<void> {
  const s = session();
  const r = await ask(s, "still there?", false);
  expect(r.status).toBe(200);
  expect(content(r.json)).toBe("echo: still there?");
}

describe("model faults through the daemon", () => {
  it("429 with retry-after on the primary: the fallback answers once, the primary cools down", async () => {
    const s = session();
    fake.enqueue({ model: "primary", error: { status: 429, retryAfter: 30 } });
    const r = await ask(s, "rate limited", true);
    expect(r.status).toBe(200);
    expect(streamedText(r.events!)).toBe("echo: rate limited");
    expect(finishes(r.events!)).toEqual(["stop"]);
    expect(fake.requests.map((q) => q.model)).toEqual(["primary", "backup"]);
    const cool = routerOf()
      .cooldowns()
      .find((c) => c.model === "fake/primary");
    expect(cool?.remainingMs).toBeGreaterThan(15_000);
    expect(expectOneTurn(s, "rate limited", "ok").model).toBe("fake/backup");
  });

  it("429 on the last model left is retried after retry-after and answered", async () => {
    const s = session();
    fake.enqueue(
      { model: "primary", error: { status: 429 } },
      { model: "backup", error: { status: 429, retryAfterMs: 50 } },
    );
    const r = await ask(s, "everyone is busy", false);
    expect(r.status).toBe(200);
    expect(content(r.json)).toBe("echo: everyone is busy");
    expect(fake.requests.map((q) => q.model)).toEqual(["primary", "backup", "backup"]);
    expectOneTurn(s, "everyone is busy", "ok");
  });

  it("500s are retried on the same model, then the fallback answers", async () => {
    const s = session();
    fake.enqueue({ model: "primary", error: { status: 500 } }, { model: "primary", error: { status: 503 } });
    const r = await ask(s, "server trouble", true);
    expect(streamedText(r.events!)).toBe("echo: server trouble");
    expect(finishes(r.events!)).toEqual(["stop"]);
    expect(fake.requests.map((q) => q.model)).toEqual(["primary", "primary", "backup"]);
    expectOneTurn(s, "server trouble", "ok");
  });

  it("every model failing gives one clear error and one stored error answer", async () => {
    const s = session();
    fake.setHandler(() => ({ error: { status: 500 } }));
    const r = await ask(s, "doomed", false);
    expect(r.status).toBe(502);
    const err = r.json?.error as { message: string; code: string };
    expect(err.message).toMatch(/every model failed/);
    expect(err.message).toMatch(/fake\/primary/);
    expect(err.message).toMatch(/fake\/backup/);
    expectOneTurn(s, "doomed", "error");
    fake.setHandler(undefined);
    await stillServing();
  });

  it("a hang past the timeout falls over without answering twice", async () => {
    const s = session();
    fake.enqueue({ model: "primary", hang: true }, { model: "primary", hang: true });
    const r = await ask(s, "are you there", true);
    expect(streamedText(r.events!)).toBe("echo: are you there");
    expect(finishes(r.events!)).toEqual(["stop"]);
    expect(fake.requests.map((q) => q.model)).toEqual(["primary", "primary", "backup"]);
    expectOneTurn(s, "are you there", "ok");
  });

  it("a hang after partial text ends with the partial text and one error, no fallback answer", async () => {
    const s = session();
    fake.enqueue({ model: "primary", hang: true, text: "Let me think about th" });
    const r = await ask(s, "half an answer", true);
    expect(r.status).toBe(200);
    expect(streamedText(r.events!)).toBe("Let me think about th");
    expect(errors(r.events!)).toHaveLength(1);
    expect(finishes(r.events!)).toEqual([]);
    expect(fake.requests.map((q) => q.model)).toEqual(["primary"]);
    expectOneTurn(s, "half an answer", "error");
    await stillServing();
  });

  it("a malformed stream before any text is retried and answered once", async () => {
    const s = session();
    fake.enqueue({ model: "primary", malformed: true });
    const r = await ask(s, "garbled", true);
    expect(streamedText(r.events!)).toBe("echo: garbled");
    expect(finishes(r.events!)).toEqual(["stop"]);
    expectOneTurn(s, "garbled", "ok");
  });

  it("a truncated stream after text gives the partial text and one clear error", async () => {
    const s = session();
    fake.enqueue({ model: "primary", truncated: true, text: "The answer is" });
    const r = await ask(s, "cut off", true);
    expect(streamedText(r.events!)).toBe("The answer is");
    const errs = errors(r.events!) as { error: { message: string } }[];
    expect(errs).toHaveLength(1);
    expect(errs[0]!.error.message).toMatch(/fake\/primary|primary/);
    expect(fake.requests).toHaveLength(1);
    expectOneTurn(s, "cut off", "error");
  });

  it("a truncated stream without text (non-streaming client) is retried and answered", async () => {
    const s = session();
    fake.enqueue({ model: "primary", truncated: true });
    const r = await ask(s, "truncated early", false);
    expect(r.status).toBe(200);
    expect(content(r.json)).toBe("echo: truncated early");
    expectOneTurn(s, "truncated early", "ok");
  });

  it("over the websocket: a 500 then fallback, and a cut stream, each end with exactly one terminal event", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "faults" });
    const events: ChatEventPayload[] = [];
    c.on("chat", (p) => events.push(p as ChatEventPayload));
    try {
      const terminal = (runId: string): ChatEventPayload[] =>
        events.filter((e) => e.runId === runId && ["final", "error", "aborted"].includes(e.state));
      fake.enqueue(
        { model: "primary", error: { status: 500 } },
        { model: "primary", error: { status: 500 } },
      );
      const a = await c.request<{ runId: string }>("chat.send", { sessionKey: "ws-faults", message: "one" });
      await waitUntil(() => terminal(a.runId).length > 0);
      routerOf().clearCooldown(); // the 500s put the primary in cooldown
      fake.enqueue({ model: "primary", truncated: true, text: "partial answ" });
      const b = await c.request<{ runId: string }>("chat.send", { sessionKey: "ws-faults", message: "two" });
      await waitUntil(() => terminal(b.runId).length > 0);
      await new Promise((r) => setTimeout(r, 300));
      expect(terminal(a.runId)).toMatchObject([{ state: "final", text: "echo: one" }]);
      const tb = terminal(b.runId);
      expect(tb).toHaveLength(1);
      expect(tb[0]!.state).toBe("error");
      const deltas = events.filter((e) => e.runId === b.runId && e.state === "delta");
      expect(deltas.map((d) => (d.state === "delta" ? d.delta : "")).join("")).toBe("partial answ");
      expect(
        stored("ws-faults")
          .filter((m) => m.role === "assistant")
          .map((m) => m.status),
      ).toEqual(["ok", "error"]);
    } finally {
      await c.close();
    }
  });

  it("a context overflow with a long history is compacted and retried: one answer", async () => {
    const s = session();
    // More history than compaction keeps verbatim (agents.defaults.compact.keep_last_n, 10).
    for (let i = 0; i < 8; i++) await ask(s, `earlier message ${i} ${"words ".repeat(40)}`, false);
    fake.reset();
    fake.enqueue(contextOverflowStep("primary"));
    const r = await ask(s, "after overflow", false);
    expect(r.status).toBe(200);
    expect(content(r.json)).toBe("echo: after overflow");
    // The overflow, a summary call, and the retry that answered.
    expect(fake.requests.length).toBeGreaterThanOrEqual(3);
    const last = fake.requests.at(-1)!;
    expect((last.body?.messages ?? []).length).toBeLessThan(18);
    const chain = host()
      .sessions.list(`agent:main:gateway:${s}`)
      .flatMap((row) => host().sessions.messages(row.id));
    const users = chain.filter((m) => m.role === "user" && m.content === "after overflow");
    expect(users.length).toBeGreaterThanOrEqual(1);
    const answers = chain.filter(
      (m) =>
        m.role === "assistant" &&
        m.content === "echo: after overflow" &&
        m.request_id === users[0]!.request_id,
    );
    expect(answers).toHaveLength(1);
    await stillServing();
  });

  it("a context overflow with nothing left to compact ends with one clear error", async () => {
    const s = session();
    await ask(s, "short history", false);
    fake.reset();
    fake.enqueue(contextOverflowStep("primary"));
    const r = await ask(s, `a huge message ${"x".repeat(2000)}`, false);
    expect(r.status).toBe(502);
    const err = r.json?.error as { message: string; code: string };
    expect(err.code).toBe("model_context_overflow");
    expect(err.message).toMatch(/too long/);
    expect(err.message).toMatch(/\/new/);
    expect(fake.requests).toHaveLength(1);
    const answers = stored(s).filter((m) => m.role === "assistant");
    expect(answers.map((m) => m.status)).toEqual(["ok", "error"]);
    await stillServing();
  });
});

async function waitUntil(pred: () => boolean, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
