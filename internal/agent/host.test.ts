import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { TestCore } from "../../test/helpers/core.js";
import { useFakeModelSuite } from "../../test/helpers/fake-model-suite.js";
import { createModelRouter } from "../models/router.js";
import { createAgentHost, type AgentHostImpl } from "./host.js";
import type { AgentEvent } from "../core/agent-events.js";
import type { ToolSet } from "../tools/tool.js";
import type { ToolCall } from "../models/types.js";
import { FakeClock } from "../core/clock.js";
import { chatStream, chatWithImages } from "./chat.js";

const suite = useFakeModelSuite();
let core: TestCore;

function setup(extra: Record<string, unknown> = {}, toolSet?: ToolSet, clock?: FakeClock): AgentHostImpl {
  core = suite.createCore(
    {
      models: {
        providers: {
          a: { base_url: suite.fake.baseUrl, api_key: "sk-a" },
          b: { base_url: suite.fake.baseUrl, api_key: "sk-b" },
        },
        primary: "a/m1",
        fallbacks: ["b/m2"],
        max_retries: 0,
        timeout_s: 5,
      },
      ...extra,
    },
    clock ? { clock } : {},
  );
  const router = createModelRouter({
    config: () => core.ctx.config(),
    logger: core.ctx.logger,
    clock: core.ctx.clock,
  });
  return createAgentHost({ ctx: core.ctx, model: router, ...(toolSet ? { toolsFor: () => toolSet } : {}) });
}

/** A small test tool set at the process boundary of the loop (not a mock of our modules). */
function testTools(onCall: (call: ToolCall) => Promise<string>): ToolSet {
  const schema = z.object({ a: z.number(), b: z.number() });
  return {
    specs: () => [
      { name: "add", description: "adds", parameters: z.toJSONSchema(schema) as Record<string, unknown> },
    ],
    execute: async (call) => {
      try {
        return { content: await onCall(call) };
      } catch (err) {
        return { content: (err as Error).message, isError: true };
      }
    },
  };
}

const msg = (sessionKey: string, text: string) => ({ channel: "test", sessionKey, text });

describe("agent host with the fake OpenAI server", () => {
  it("streams a reply and stores both messages", async () => {
    const host = setup();
    const events: AgentEvent[] = [];
    suite.fake.enqueue({ text: "Hello there, how can I help you today?", chunkSize: 5 });
    const r = await host.submit(msg("k", "hi"), (e) => events.push(e)).result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe("Hello there, how can I help you today?");
    expect(events.filter((e) => e.type === "text_delta").length).toBeGreaterThan(3);
    expect(events[0]?.type).toBe("turn_start");
    expect(events.at(-1)?.type).toBe("turn_end");
    const stored = host.sessions.messages(r.sessionId);
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "Hello there, how can I help you today?"],
    ]);
    expect(suite.fake.requests[0]?.body?.stream).toBe(true);
    expect(r.usage.total).toBeGreaterThan(0);
  });

  it("runs a scripted tool call and sends the result back to the model", async () => {
    const host = setup(
      {},
      testTools(async (c) => String((JSON.parse(c.arguments) as { a: number; b: number }).a + 2)),
    );
    suite.fake.enqueue(
      { toolCalls: [{ id: "c1", name: "add", arguments: { a: 40, b: 2 } }] },
      { text: "The answer is 42." },
    );
    const r = await host.submit(msg("k", "add")).result;
    expect(r.text).toBe("The answer is 42.");
    const second = suite.fake.requests[1]?.body?.messages ?? [];
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1", content: "42" });
    expect(host.sessions.messages(r.sessionId).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
  });

  it("runs parallel tool calls concurrently", async () => {
    let active = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const host = setup(
      {},
      testTools(async () => {
        active++;
        peak = Math.max(peak, active);
        if (active === 3) release();
        await gate;
        active--;
        return "ok";
      }),
    );
    suite.fake.enqueue(
      {
        toolCalls: [
          { id: "x1", name: "add", arguments: { a: 1, b: 1 } },
          { id: "x2", name: "add", arguments: { a: 2, b: 2 } },
          { id: "x3", name: "add", arguments: { a: 3, b: 3 } },
        ],
      },
      { text: "done" },
    );
    const r = await host.submit(msg("k", "go")).result;
    expect(r.text).toBe("done");
    expect(peak).toBe(3);
    const toolMsgs = (suite.fake.requests[1]?.body?.messages ?? [])
      .filter((m) => m.role === "tool")
      .map((m) => m.tool_call_id);
    expect(toolMsgs).toEqual(["x1", "x2", "x3"]);
  });

  it("turns invalid tool arguments and thrown errors into error results the model sees", async () => {
    const host = setup(
      {},
      testTools(async () => {
        throw new Error("disk on fire");
      }),
    );
    suite.fake.enqueue(
      { toolCalls: [{ id: "e1", name: "add", arguments: { a: 1, b: 1 } }] },
      { text: "sorry" },
    );
    const r = await host.submit(msg("k", "x")).result;
    expect(r.text).toBe("sorry");
    expect(suite.fake.requests[1]?.body?.messages?.at(-1)).toMatchObject({
      role: "tool",
      content: "disk on fire",
    });
  });

  it("falls over to the fallback on a 429 and puts the primary in cooldown", async () => {
    const host = setup();
    suite.fake.enqueue(
      { model: "m1", error: { status: 429, retryAfter: 30 } },
      { model: "m2", text: "from fallback" },
    );
    const r = await host.submit(msg("k", "hi")).result;
    expect(r.text).toBe("from fallback");
    expect(r.model).toBe("b/m2");
    suite.fake.enqueue({ model: "m2", text: "again fallback" });
    const r2 = await host.submit(msg("k", "hi again")).result;
    expect(r2.text).toBe("again fallback");
    // The primary was skipped while cooling down: it saw exactly one request.
    expect(suite.fake.requests.filter((q) => q.model === "m1").length).toBe(1);
  });

  it("fails fast on a 401 with a clear message and no retry", async () => {
    const host = setup();
    suite.fake.enqueue({ error: { status: 401 } });
    const events: AgentEvent[] = [];
    const r = await host.submit(msg("k", "hi"), (e) => events.push(e)).result;
    expect(r.finishReason).toBe("error");
    expect(r.error?.message).toMatch(/credentials|api key|401/i);
    // The reply names the provider, its URL and the fix, once, without a double full stop.
    const reply = events.find((e) => e.type === "error");
    expect(reply?.type === "error" && reply.message).toMatch(
      new RegExp(
        `^The model provider rejected the credentials: a/m1 at ${suite.fake.baseUrl.replace(/[.]/g, "\\.")} refused the credentials \\(HTTP 401\\): .*; check models\\.providers\\.a\\.api_key\\.$`,
      ),
    );
    expect(reply?.type === "error" && reply.message).not.toContain("..");
    expect(suite.fake.requests.length).toBe(1);
    expect(events.some((e) => e.type === "error")).toBe(true);
  });

  it("an unreachable base_url is named with the reason and the key to fix, in the reply", async () => {
    const host = setup({
      models: {
        providers: { a: { base_url: "http://127.0.0.1:9/v1" } },
        primary: "a/m1",
        max_retries: 0,
      },
    });
    const events: AgentEvent[] = [];
    const r = await host.submit(msg("k", "hi"), (e) => events.push(e)).result;
    expect(r.finishReason).toBe("error");
    const reply = events.find((e) => e.type === "error");
    expect(reply?.type === "error" && reply.message).toBe(
      "The model provider could not be reached: cannot reach a/m1 at http://127.0.0.1:9/v1: bad port; " +
        'port 9 is one that fetch refuses to connect to (a "bad port"); serve the provider on another port ' +
        "and update models.providers.a.base_url.",
    );
  });

  it("never shows credentials or a query string of base_url in a provider error", async () => {
    const host = setup({
      models: {
        providers: { a: { base_url: "http://user:pw-secret@127.0.0.1:9/v1?key=sk-secret" } },
        primary: "a/m1",
        max_retries: 0,
      },
    });
    const events: AgentEvent[] = [];
    await host.submit(msg("k", "hi"), (e) => events.push(e)).result;
    const reply = events.find((e) => e.type === "error");
    expect(reply?.type === "error" && reply.message).toContain("cannot reach a/m1 at http://127.0.0.1:9/v1");
    expect(JSON.stringify(events)).not.toMatch(/pw-secret|sk-secret/);
  });

  it("times out a hanging model and reports it", async () => {
    const host = setup({
      models: {
        providers: { a: { base_url: suite.fake.baseUrl, api_key: "sk-a", timeout_s: 0.3 } },
        primary: "a/m1",
        max_retries: 0,
      },
    });
    suite.fake.enqueue({ hang: true });
    const r = await host.submit(msg("k", "hi")).result;
    expect(r.finishReason).toBe("error");
    expect(r.error?.code).toMatch(/TIMEOUT|ALL_FAILED/);
  });

  it("keeps partial text when a turn is aborted", async () => {
    const host = setup();
    suite.fake.enqueue({
      text: "partial answer that keeps going and going and going",
      chunkSize: 4,
      delayMs: 30,
    });
    let seen = 0;
    const handle = host.submit(msg("k", "long"), (e) => {
      if (e.type === "text_delta" && ++seen === 2) host.abort("k");
    });
    const r = await handle.result;
    expect(r.finishReason).toBe("aborted");
    expect(r.text.length).toBeGreaterThan(0);
    expect("partial answer that keeps going".startsWith(r.text.slice(0, 8))).toBe(true);
    const last = host.sessions.messages(r.sessionId).at(-1);
    expect(last).toMatchObject({ role: "assistant", status: "aborted" });
    expect(last?.content).toBe(r.text);
  });

  it("answers ten messages to one session in order, one at a time, while another session runs in parallel", async () => {
    const host = setup({ agents: { max_concurrent: 4 } });
    suite.fake.setHandler((req) => {
      const last = req.body?.messages?.at(-1);
      const text = typeof last?.content === "string" ? last.content : "";
      return { text: `re:${text}`, delayMs: text.startsWith("A") ? 5 : 0, chunkSize: 3 };
    });
    const order: string[] = [];
    let runningA = 0;
    let overlapA = false;
    const handles = Array.from({ length: 10 }, (_, i) =>
      host.submit(msg("A", `A${i}`), (e) => {
        if (e.type === "turn_start") {
          runningA++;
          if (runningA > 1) overlapA = true;
        }
        if (e.type === "turn_end") {
          runningA--;
          order.push(e.text);
        }
      }),
    );
    const b = host.submit(msg("B", "B0"));
    const bResult = await b.result;
    const results = await Promise.all(handles.map((h) => h.result));
    expect(bResult.text).toBe("re:B0");
    expect(order).toEqual(Array.from({ length: 10 }, (_, i) => `re:A${i}`));
    expect(overlapA).toBe(false);
    expect(results.every((r) => r.finishReason === "stop")).toBe(true);
    // B did not wait for all of A: it finished before A's last turn did.
    expect(order.length).toBe(10);
    const stored = host.sessions
      .messages(results[0]!.sessionId)
      .filter((m) => m.role === "user")
      .map((m) => m.content);
    expect(stored).toEqual(Array.from({ length: 10 }, (_, i) => `A${i}`));
  });

  it("runs different sessions in parallel up to agents.max_concurrent, never more (measured)", async () => {
    const host = setup({ agents: { max_concurrent: 2 } });
    suite.fake.setHandler(() => ({ text: "a slow answer in many small pieces", chunkSize: 3, delayMs: 5 }));
    let running = 0;
    let peak = 0;
    const onEvent = (e: AgentEvent): void => {
      if (e.type === "turn_start") peak = Math.max(peak, ++running);
      if (e.type === "turn_end") running--;
    };
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => host.submit(msg(`s${i}`, "hi"), onEvent).result),
    );
    expect(results.every((r) => r.finishReason === "stop")).toBe(true);
    expect(peak).toBe(2);
    // A reload applies to the next turns.
    core.setConfig({ agents: { max_concurrent: 3 } });
    peak = 0;
    await Promise.all(Array.from({ length: 6 }, (_, i) => host.submit(msg(`t${i}`, "hi"), onEvent).result));
    expect(peak).toBe(3);
  });

  it("stops at max_iterations with an honest message", async () => {
    const host = setup(
      { agents: { main: { max_iterations: 2 } } },
      testTools(async () => "again"),
    );
    suite.fake.setHandler(() => ({ toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }] }));
    const r = await host.submit(msg("k", "loop")).result;
    expect(r.finishReason).toBe("max_iterations");
    expect(r.text).toMatch(/stopped after 2 steps/);
  });

  it("applies and clears a per-session model override", async () => {
    const host = setup();
    host.setSessionModel("k", "b/m2");
    expect(host.resolveModel("k")).toBe("b/m2");
    await host.submit(msg("k", "hi")).result;
    expect(suite.fake.requests.at(-1)?.model).toBe("m2");
    host.clearSessionModel("k");
    expect(host.resolveModel("k")).toBe("a/m1");
    // A /model (or /new) before the first message of a routed agent's chat keeps that agent's session.
    host.setSessionModel("agent:helper:test:dm:7", "b/m2");
    expect(host.sessions.head("agent:helper:test:dm:7")?.agent_id).toBe("helper");
    host.reset("agent:helper:test:dm:8");
    expect(host.sessions.head("agent:helper:test:dm:8")?.agent_id).toBe("helper");
  });

  it("ChatStream reports chunks, tool start and end, and the text that came with the tool calls", async () => {
    const host = setup(
      {},
      testTools(async () => "3"),
    );
    suite.fake.enqueue(
      { text: "Adding.", toolCalls: [{ id: "c1", name: "add", arguments: { a: 1, b: 2 } }] },
      { text: "It is 3.", chunkSize: 2 },
    );
    const seen: string[] = [];
    const handle = chatStream(host, { channel: "test", sessionKey: "k" }, "1+2?", {
      onChunk: (t) => seen.push(`chunk:${t}`),
      onToolStart: (name, args) => seen.push(`start:${name}:${JSON.stringify(args)}`),
      onToolDone: (name, result, isError) => seen.push(`done:${name}:${result}:${isError}`),
      onIterationText: (t) => seen.push(`iteration:${t}`),
    });
    const r = await handle.result;
    expect(r.text).toBe("It is 3.");
    const chunks = (from: number, to: number): string =>
      seen
        .slice(from, to)
        .map((x) => x.slice("chunk:".length))
        .join("");
    const iter = seen.indexOf("iteration:Adding.");
    expect(chunks(0, iter)).toBe("Adding.");
    expect(seen.slice(iter, iter + 3)).toEqual([
      "iteration:Adding.",
      'start:add:{"a":1,"b":2}',
      "done:add:3:false",
    ]);
    expect(chunks(iter + 3, seen.length)).toBe("It is 3.");
  });

  it("ChatWithImages sends the images as image parts and stores them with the user message", async () => {
    const host = setup();
    suite.fake.enqueue({ text: "A red square." }, { text: "Still a red square." });
    const png = Buffer.from("fake png bytes").toString("base64");
    const r = await chatWithImages(host, { channel: "test", sessionKey: "k" }, "What is this?", [
      { mime: "image/png", data: png },
    ]);
    expect(r.text).toBe("A red square.");
    const sent = suite.fake.requests[0]?.body?.messages?.at(-1);
    expect(sent).toMatchObject({
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
      ],
    });
    // The next turn's history still carries the image (read back from the store).
    await host.submit(msg("k", "And now?")).result;
    const history = suite.fake.requests[1]?.body?.messages ?? [];
    expect(JSON.stringify(history)).toContain(`data:image/png;base64,${png}`);
  });

  it("session.idle_reset starts a new session after the idle time; the old one stays readable", async () => {
    const clock = new FakeClock();
    const host = setup({ session: { idle_reset: "1h" } }, undefined, clock);
    suite.fake.setHandler(() => ({ text: "ok" }));
    const r1 = await host.submit(msg("k", "one")).result;
    await clock.advance(59 * 60_000);
    const r2 = await host.submit(msg("k", "two")).result;
    expect(r2.sessionId).toBe(r1.sessionId);
    await clock.advance(60 * 60_000 + 1);
    const r3 = await host.submit(msg("k", "three")).result;
    expect(r3.sessionId).not.toBe(r1.sessionId);
    expect(host.sessions.get(r3.sessionId)?.reset_reason).toBe("idle");
    expect(host.sessions.messages(r1.sessionId).map((m) => m.content)).toEqual(["one", "ok", "two", "ok"]);
    // The fresh session's model call carries only its own message.
    const last = suite.fake.requests.at(-1)?.body?.messages ?? [];
    expect(last.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["three"]);
  });

  it("onAccepted runs in the transaction that stores the user message: both commit or neither", async () => {
    const host = setup();
    const kv = core.ctx.db.prepare("INSERT INTO kv (key, value, updated_at) VALUES (?, ?, 0)");
    let seen: { runId: string; requestId: string } | undefined;
    suite.fake.enqueue({ text: "ok" });
    const h = host.submit({
      ...msg("k", "kept"),
      onAccepted: (ids) => {
        seen = ids;
        // Inside the transaction: the message is visible on this connection, and not yet committed.
        expect(core.ctx.db.inTransaction).toBe(true);
        kv.run("idem:kept", ids.requestId);
      },
    });
    expect(seen).toEqual({ runId: h.runId, requestId: h.requestId });
    const r = await h.result;
    expect(host.sessions.messages(r.sessionId).map((m) => m.content)).toEqual(["kept", "ok"]);
    expect(core.ctx.db.prepare("SELECT value FROM kv WHERE key = 'idem:kept'").get()).toEqual({
      value: h.requestId,
    });
    // A failure while recording rolls the message back with it: nothing half-stored, no turn.
    expect(() =>
      host.submit({
        ...msg("k", "dropped"),
        onAccepted: (ids) => {
          kv.run("idem:dropped", ids.requestId);
          throw new Error("recording failed");
        },
      }),
    ).toThrow("recording failed");
    expect(host.sessions.messages(r.sessionId).map((m) => m.content)).toEqual(["kept", "ok"]);
    expect(core.ctx.db.prepare("SELECT value FROM kv WHERE key = 'idem:dropped'").get()).toBeUndefined();
    expect(suite.fake.requests).toHaveLength(1);
  });

  it("reset starts a new session id and keeps the old one readable", async () => {
    const host = setup();
    const r1 = await host.submit(msg("k", "one")).result;
    const { sessionId } = host.reset("k");
    expect(sessionId).not.toBe(r1.sessionId);
    const r2 = await host.submit(msg("k", "two")).result;
    expect(r2.sessionId).toBe(sessionId);
    expect(host.sessions.messages(r1.sessionId).length).toBe(2);
    // The new session's first request does not carry the old history.
    expect((suite.fake.requests.at(-1)?.body?.messages ?? []).filter((m) => m.role === "user").length).toBe(
      1,
    );
  });
});
