/**
 * Auto-compaction through the running daemon (websocket client, fake model): a long session on a
 * 16K-window model stays under its budget on every call, a silent memory-flush turn saves a fact to
 * MEMORY.md first, the user sees a one-line notice, and the session continues on the successor.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../internal/gateway/client.js";
import type { ChatEventPayload } from "../internal/gateway/chat-events.js";
import { startFakeOpenAI, type ChatBody } from "./fakes/openai-server.js";
import { startGatewayDaemon, type GatewayHarness } from "./gateway/harness.js";

const WINDOW = 16_384;
let h: GatewayHarness;
let c: GatewayClient;
const events: ChatEventPayload[] = [];
const calls: { kind: "flush" | "flush-done" | "summary" | "turn"; chars: number }[] = [];

function lastText(body: ChatBody | undefined): string {
  const last = body?.messages?.at(-1);
  return typeof last?.content === "string" ? last.content : "";
}

beforeAll(async () => {
  const fake = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake,
    config: {
      models: {
        providers: {
          fake: {
            base_url: fake.baseUrl,
            api_key: "sk-fake",
            models: { small: { context_window: WINDOW } },
          },
        },
        primary: "fake/small",
        max_retries: 0,
        timeout_s: 10,
      },
      agents: {
        defaults: { compact: { keep_last_n: 4, reserve_tokens: 1024 } },
        nomem: { tools: { deny: ["group:memory"] } },
      },
    },
  });
  h.fake.setHandler((req) => {
    const body = req.body;
    const system = typeof body?.messages?.[0]?.content === "string" ? body.messages[0].content : "";
    const chars = JSON.stringify(body?.messages ?? []).length;
    const text = lastText(body);
    if (system.startsWith("You compress part of a conversation") || system.startsWith("You merge")) {
      calls.push({ kind: "summary", chars });
      return { text: "- Facts and identifiers: invoice INV-20931 is due on 2026-12-01." };
    }
    if (text.includes("[memory flush")) {
      calls.push({ kind: "flush", chars });
      return {
        toolCalls: [
          { name: "memory_write", arguments: { kind: "fact", text: "Invoice INV-20931 is due 2026-12-01" } },
        ],
      };
    }
    if (body?.messages?.at(-1)?.role === "tool") {
      calls.push({ kind: "flush-done", chars });
      return { text: "NO_REPLY" };
    }
    calls.push({ kind: "turn", chars });
    return { text: `noted (${text.length} chars)` };
  });
  c = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "compaction-test" });
  c.on("chat", (p) => events.push(p as ChatEventPayload));
});
afterAll(async () => {
  await c?.close();
  await h?.close();
  await h?.fake.close();
});

describe("auto-compaction in the daemon", () => {
  it("flushes memory, compacts, tells the user and keeps every call under the window", async () => {
    const filler = "The quarterly report covers revenue, churn and hiring plans in detail. ".repeat(80);
    await c.request("chat.send", {
      sessionKey: "long",
      message: "Invoice INV-20931 is due on 2026-12-01.",
      wait: true,
    });
    for (let i = 0; i < 14; i++)
      await c.request("chat.send", { sessionKey: "long", message: `Part ${i}: ${filler}`, wait: true });

    const flushAt = calls.findIndex((x) => x.kind === "flush");
    const summaryAt = calls.findIndex((x) => x.kind === "summary");
    expect(flushAt).toBeGreaterThanOrEqual(0);
    expect(summaryAt).toBeGreaterThan(flushAt);
    expect(calls[flushAt + 1]?.kind).toBe("flush-done");
    // The flush reply is never shown: no final event carries NO_REPLY.
    expect(events.some((e) => e.state === "final" && e.text === "NO_REPLY")).toBe(false);
    const memory = readFileSync(join(h.dir, "workspace", "MEMORY.md"), "utf8");
    expect(memory).toContain("INV-20931");

    const notices = events.filter((e) => e.state === "notice");
    expect(notices.length).toBeGreaterThanOrEqual(1);
    expect((notices[0] as { text: string }).text).toMatch(/compact|summar/i);

    // 4 chars per token is the estimator's own ratio; every request stayed inside the window.
    for (const x of calls) expect(x.chars / 4).toBeLessThan(WINDOW);

    const hist = await c.request<{ sessionId: string; messages: { role: string; content: string }[] }>(
      "chat.history",
      { sessionKey: "long", limit: 1000 },
    );
    expect(hist.messages.some((m) => m.content.includes("INV-20931"))).toBe(true);
    const r = await c.request<{ result: { text: string } }>("chat.send", {
      sessionKey: "long",
      message: "what was due?",
      wait: true,
    });
    expect(r.result.text).toContain("noted");
  });

  it("skips the memory flush for an agent without the memory tools, and still compacts", async () => {
    const filler = "The quarterly report covers revenue, churn and hiring plans in detail. ".repeat(80);
    const from = calls.length;
    const noticesBefore = events.filter((e) => e.state === "notice").length;
    for (let i = 0; i < 14; i++)
      await c.request("chat.send", {
        sessionKey: "nomem-long",
        agent: "nomem",
        message: `Part ${i}: ${filler}`,
        wait: true,
      });
    const mine = calls.slice(from);
    expect(mine.some((x) => x.kind === "summary")).toBe(true);
    expect(mine.some((x) => x.kind === "flush")).toBe(false);
    expect(events.filter((e) => e.state === "notice").length).toBeGreaterThan(noticesBefore);
  });
});
