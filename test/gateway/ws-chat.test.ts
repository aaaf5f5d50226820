/**
 * The websocket protocol end to end: a real daemon with the fake OpenAI server behind it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GatewayClient, GatewayClientError } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "ws-chat-token-abcdef";
let h: GatewayHarness;
let c: GatewayClient;
let events: ChatEventPayload[];
let other: { event: string; payload: unknown }[];

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { channels: { telegram: { token: "123456:telegram-secret-value" } } },
  });
  c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "ws-test" });
  c.on("chat", (p) => events.push(p as ChatEventPayload));
  c.on("*", (p) => other.push(p as { event: string; payload: unknown }));
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});
beforeEach(() => {
  h.fake.reset();
  events = [];
  other = [];
});

const finalOf = (runId: string) => () =>
  events.find((e) => e.runId === runId && ["final", "aborted", "error"].includes(e.state));

describe("websocket chat", () => {
  it("streams deltas and a final event carrying runId and sessionKey", async () => {
    h.fake.enqueue({ text: "Hello from the fake model, streamed in pieces.", chunkSize: 5 });
    const r = await c.request<{ runId: string; sessionKey: string; status: string }>("chat.send", {
      sessionKey: "s1",
      message: "hi",
    });
    expect(r).toMatchObject({ status: "started", sessionKey: "agent:main:gateway:s1" });
    const fin = await waitFor(finalOf(r.runId));
    expect(fin).toMatchObject({
      state: "final",
      sessionKey: "agent:main:gateway:s1",
      text: "Hello from the fake model, streamed in pieces.",
    });
    const deltas = events.filter((e) => e.runId === r.runId && e.state === "delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => (d.state === "delta" ? d.delta : "")).join("")).toBe(
      "Hello from the fake model, streamed in pieces.",
    );
    const hist = await c.request<{ messages: { role: string; content: string }[] }>("chat.history", {
      sessionKey: "s1",
    });
    expect(hist.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "Hello from the fake model, streamed in pieces."],
    ]);
  });

  it("a repeated idempotencyKey returns the first result and never runs a second turn", async () => {
    h.fake.enqueue({ text: "only once" });
    const a = await c.request<{ runId: string; result: { text: string } }>("chat.send", {
      sessionKey: "idem",
      message: "go",
      idempotencyKey: "k-1",
      wait: true,
    });
    const b = await c.request<{ runId: string; duplicate: boolean; result: { text: string } }>("chat.send", {
      sessionKey: "idem",
      message: "go",
      idempotencyKey: "k-1",
      wait: true,
    });
    expect(a.result.text).toBe("only once");
    expect(b).toMatchObject({ runId: a.runId, duplicate: true, result: { text: "only once" } });
    expect(h.fake.requests.length).toBe(1);
    const hist = await c.request<{ messages: unknown[] }>("chat.history", { sessionKey: "idem" });
    expect(hist.messages.length).toBe(2);
  });

  it("chat.abort stops a running turn and the client sees an aborted event", async () => {
    h.fake.enqueue({ hang: true, text: "partial answer" });
    const r = await c.request<{ runId: string }>("chat.send", { sessionKey: "ab", message: "long task" });
    await waitFor(() => events.some((e) => e.runId === r.runId && e.state === "delta"));
    const ab = await c.request<{ aborted: boolean }>("chat.abort", { sessionKey: "ab" });
    expect(ab.aborted).toBe(true);
    const fin = await waitFor(finalOf(r.runId));
    expect(fin.state).toBe("aborted");
  });

  it("sessions.list, reset and delete work on the core tables and emit session.changed", async () => {
    h.fake.enqueue({ text: "one" });
    await c.request("chat.send", { sessionKey: "life", message: "x", wait: true });
    const list = await c.request<{ sessions: { sessionKey: string; messageCount: number }[] }>(
      "sessions.list",
      { prefix: "agent:main:gateway:" },
    );
    expect(list.sessions.find((s) => s.sessionKey === "agent:main:gateway:life")?.messageCount).toBe(2);
    const reset = await c.request<{ sessionId: string }>("sessions.reset", { sessionKey: "life" });
    await waitFor(() =>
      other.some(
        (o) => o.event === "session.changed" && (o.payload as { reason: string }).reason === "reset",
      ),
    );
    expect(
      (await c.request<{ sessionId: string; messages: unknown[] }>("chat.history", { sessionKey: "life" }))
        .sessionId,
    ).toBe(reset.sessionId);
    const del = await c.request<{ deleted: boolean }>("sessions.delete", { sessionKey: "life" });
    expect(del.deleted).toBe(true);
    expect(
      (await c.request<{ sessionId: string | null }>("chat.history", { sessionKey: "life" })).sessionId,
    ).toBeNull();
    await expect(c.request("sessions.delete", { sessionKey: "life" })).rejects.toMatchObject({
      code: "not_found",
    });
  });

  it("refuses writes to another channel's session unless allowed", async () => {
    const err = await c
      .request("chat.send", { sessionKey: "agent:main:telegram:dm:42", message: "hi" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayClientError);
    expect((err as GatewayClientError).code).toBe("forbidden");
    await expect(
      c.request("chat.send", { sessionKey: "s", message: "x", agent: "ghost" }),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("config.get redacts secrets; status and usage report; parts not running answer unavailable", async () => {
    const cfg = await c.request<{
      config: { gateway: { token: string }; channels: { telegram: { token: string } } };
    }>("config.get");
    expect(cfg.config.gateway.token).toBe("[REDACTED]");
    expect(cfg.config.channels.telegram.token).toBe("[REDACTED]");
    expect(JSON.stringify(cfg)).not.toContain("telegram-secret-value");
    expect(JSON.stringify(cfg)).not.toContain("sk-fake");
    const st = await c.request<{ uptimeS: number; queueDepth: number; tokensToday: { total: number } }>(
      "status",
    );
    expect(st.queueDepth).toBe(0);
    expect(st.tokensToday.total).toBeGreaterThan(0);
    const usage = await c.request<Record<string, unknown>>("usage.get", { days: 1 });
    expect(JSON.stringify(usage)).toMatch(/test-model/);
    if (!h.daemon.parts.cron)
      await expect(c.request("cron.list")).rejects.toMatchObject({ code: "unavailable" });
    const logs = await c.request<{ lines: unknown[] }>("logs.tail", { lines: 50 });
    expect(logs.lines.length).toBeGreaterThan(0);
  });

  it("metrics count turns and tokens from the event bus", async () => {
    // One failing turn, so the error counter has something to count.
    h.fake.enqueue({ error: { status: 500, message: "upstream exploded" } });
    const failed = await c.request<{ result: { finishReason: string } }>("chat.send", {
      sessionKey: "metrics-err",
      message: "x",
      wait: true,
    });
    expect(failed.result.finishReason).toBe("error");
    const text = await (
      await fetch(`${h.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toMatch(/familiar_turns_total\{channel="gateway",finish_reason="stop"\} [1-9]/);
    expect(text).toMatch(/familiar_tokens_total\{kind="input"\} [1-9]/);
    expect(text).toMatch(/familiar_turn_duration_seconds_count [1-9]/);
    expect(text).toMatch(/familiar_errors_total\{code="[A-Z_]+"\} [1-9]/);
    expect(text).toMatch(/familiar_turns_total\{channel="gateway",finish_reason="error"\} [1-9]/);
    expect(text).toMatch(/^familiar_queue_depth 0$/m);
  });

  it("slash commands are answered by the shared commands module without a model call", async () => {
    const r = await c.request<{ runId: string; command: string; result: { text: string } }>("chat.send", {
      sessionKey: "cmds",
      message: "/help",
    });
    expect(r.command).toBe("help");
    expect(r.result.text).toMatch(/\/new/);
    const fin = await waitFor(finalOf(r.runId));
    expect(fin).toMatchObject({ state: "final", text: r.result.text });
    const ag = await c.request<{ result: { text: string } }>("chat.send", {
      sessionKey: "cmds",
      message: "/agent main",
    });
    expect(ag.result.text).toMatch(/main/);
    expect(h.fake.requests.length).toBe(0);
  });

  it("pairing.list answers from the store; approving an unknown code is not_found", async () => {
    const list = await c.request<{ requests: unknown[] }>("pairing.list");
    expect(list.requests).toEqual([]);
    await expect(
      c.request("pairing.approve", { channel: "telegram", code: "ABCDEFGH" }),
    ).rejects.toMatchObject({ code: "not_found" });
  });
});
