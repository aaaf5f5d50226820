/**
 * An approval wait as its own span of the turn's trace, through a real daemon (in-process, real
 * gateway socket, fake model) on a FakeClock: the model asks to write `.envrc` (which always asks),
 * the owner answers 42 s of clock time later, and `GET /api/traces/{id}` shows an `approval` span from
 * the question to the answer, inside the tool call's span, with the decision, the reason and the
 * chat that answered; a question nobody answers ends `expired` at the timeout.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../internal/core/clock.js";
import type { TraceCall, TraceReport } from "../../internal/agent/trace-wire.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "trace-approvals-token-0123456789";
const clock = new FakeClock(Date.UTC(2026, 5, 1, 12, 0));
let h: GatewayHarness;
const clients: GatewayClient[] = [];

beforeAll(async () => {
  h = await startGatewayDaemon({ clock, gateway: { token: TOKEN }, config: { heartbeat: { every: 0 } } });
});
afterAll(async () => {
  await h?.close();
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  h.fake.reset();
});

async function webChat(name: string) {
  const client = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: name });
  clients.push(client);
  const approvals: { id: string }[] = [];
  const chat: ChatEventPayload[] = [];
  client.on("approval.request", (p) => approvals.push(p as { id: string }));
  client.on("chat", (p) => chat.push(p as ChatEventPayload));
  return { client, approvals, chat };
}

async function get<T>(path: string): Promise<{ status: number; body: T }> {
  const r = await fetch(h.base + path, { headers: h.headers() });
  return { status: r.status, body: (await r.json()) as T };
}

/** The newest turn's trace (the list is newest first). */
async function newestTrace(): Promise<TraceReport> {
  const list = await get<{ traces: { request_id: string }[] }>("/api/traces?limit=1");
  const id = list.body.traces[0]!.request_id;
  const r = await get<TraceReport>(`/api/traces/${encodeURIComponent(id)}`);
  expect(r.status).toBe(200);
  return r.body;
}

function spans(r: TraceReport): { approval: TraceCall; tool: TraceCall } {
  const approval = r.calls.filter((c) => c.kind === "approval");
  expect(approval).toHaveLength(1);
  const tool = r.calls.find((c) => c.kind === "tool" && c.name === "write_file");
  expect(tool).toBeDefined();
  return { approval: approval[0]!, tool: tool! };
}

describe("an approval wait in the turn's trace", () => {
  it("is a span from the question to the answer, inside the tool call, with the decision", async () => {
    const web = await webChat("web-chat");
    h.fake.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content: "export A=1\n" } }] },
      { text: "written" },
    );
    const sent = await web.client.request<{ runId: string }>("chat.send", {
      sessionKey: "span-approve",
      message: "write my .envrc",
    });
    const asked = await waitFor(() => web.approvals[0]);
    // While it waits, the span is open: no end yet.
    const open = spans(await newestTrace()).approval;
    expect(open.ended_at).toBeNull();
    expect(open.status).toBe("running");
    await clock.advance(42_000);
    await web.client.request("approvals.resolve", { id: asked.id, decision: "approve" });
    await waitFor(() => web.chat.find((e) => e.runId === sent.runId && e.state === "final"));

    const { approval, tool } = spans(await newestTrace());
    expect(approval.name).toBe("file");
    expect(approval.status).toBe("approved");
    expect(approval.ended_at! - approval.started_at).toBe(42_000);
    expect(approval.detail).toMatchObject({
      kind: "file",
      decision: "approved",
      reason: "approved by the owner",
    });
    expect(String(approval.detail?.summary)).toContain(".envrc");
    // Answered from the chat that was asked (the web chat's connection), not the owner's console.
    expect(String(approval.detail?.via)).toMatch(/^gateway:/);
    // On the same axis as the tool call that waited for it, and inside it.
    expect(approval.started_at).toBeGreaterThanOrEqual(tool.started_at);
    expect(approval.ended_at!).toBeLessThanOrEqual(tool.ended_at!);
  });

  it("a question nobody answers ends expired at the timeout, with the reason", async () => {
    const web = await webChat("web-chat-2");
    h.fake.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content: "export B=2\n" } }] },
      { text: "not written" },
    );
    const sent = await web.client.request<{ runId: string }>("chat.send", {
      sessionKey: "span-expire",
      message: "write it",
    });
    await waitFor(() => web.approvals[0]);
    await clock.advance(300_000);
    await waitFor(() => web.chat.find((e) => e.runId === sent.runId && e.state === "final"));
    const { approval } = spans(await newestTrace());
    expect(approval.status).toBe("expired");
    expect(approval.ended_at! - approval.started_at).toBe(300_000);
    expect(approval.detail).toMatchObject({ decision: "expired", reason: "no answer within 300s" });
    expect(approval.detail?.via).toBeUndefined();
  });
});
