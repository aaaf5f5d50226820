/**
 * `POST .../messages/stream` (SSE) over real HTTP: the event order of a turn that reasons, calls a
 * built-in tool and answers; a client that disconnects mid-stream (the turn finishes and is stored);
 * a failing model (terminal `error`); the 308 of an archived session on the stream path.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "../gateway/harness.js";
import { apiClient, parseSse, sawToken, SseReader, type ApiClient, type SseEvent } from "./api-client.js";

const TOKEN = "api-stream-token";
let h: GatewayHarness;
let api: ApiClient;

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { agents: { default: "main", main: {} } },
  });
  api = apiClient(h.base, TOKEN);
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const newSession = async (body: Record<string, unknown> = {}): Promise<string> =>
  (await api.req<{ id: string }>("POST", "/api/agents/main/sessions", body)).body.id;

/** Collapses runs of the same event name: ["a","a","b"] -> ["a","b"]. */
const runs = (events: SseEvent[]): string[] =>
  events.map((e) => e.event).filter((e, i, all) => i === 0 || all[i - 1] !== e);

describe("/api SSE turns", () => {
  it("streams user-message, thought, token, token-reset, tool-call, tool-result, token, done in order", async () => {
    const sid = await newSession();
    h.fake.enqueue({
      reasoning: "The user wants the time; I should call the clock.",
      text: "Let me check.",
      toolCalls: [{ id: "call_1", name: "current_time", arguments: {} }],
      chunkSize: 4,
    });
    h.fake.enqueue({ text: "It is time for tea.", chunkSize: 4 });
    const { status, events, headers } = await api.stream(`/api/agents/main/sessions/${sid}/messages/stream`, {
      message: "What time is it?",
    });
    expect(status).toBe(200);
    expect(runs(events)).toEqual([
      "user-message",
      "thought",
      "token",
      "token-reset",
      "tool-call",
      "tool-result",
      "token",
      "done",
    ]);
    const byType = (t: string): SseEvent[] => events.filter((e) => e.event === t);
    expect(byType("user-message")[0]?.data).toMatchObject({
      message: { role: "user", content: "What time is it?", session_id: sid },
    });
    expect(
      byType("thought")
        .map((e) => e.data.delta)
        .join(""),
    ).toBe("The user wants the time; I should call the clock.");
    const tokens = byType("token").map((e) => e.data.delta as string);
    const reset = events.findIndex((e) => e.event === "token-reset");
    const before = events
      .slice(0, reset)
      .filter((e) => e.event === "token")
      .map((e) => e.data.delta);
    expect(before.join("")).toBe("Let me check.");
    expect(tokens.join("")).toBe("Let me check.It is time for tea.");
    expect(byType("tool-call")[0]?.data).toEqual({ toolName: "current_time", args: {}, callId: "call_1" });
    const result = byType("tool-result")[0]?.data;
    expect(result).toMatchObject({ toolName: "current_time", callId: "call_1", isError: false });
    expect(String(result?.result)).toMatch(/\d{4}/);
    expect(byType("done")).toHaveLength(1);
    expect(byType("error")).toHaveLength(0);
    const done = byType("done")[0]?.data ?? {};
    expect(done).toMatchObject({
      message: { role: "assistant", content: "It is time for tea.", finish_reason: "stop" },
      finish_reason: "stop",
      session_id: sid,
      sub_calls: 3, // two model calls and one tool call
    });
    expect(headers.get("x-familiar-request-id")).toBe(done.request_id);
    // The whole exchange is stored in order.
    const msgs = await api.req<{ messages: { role: string; tool_name?: string }[] }>(
      "GET",
      `/api/agents/main/sessions/${sid}/messages`,
    );
    expect(msgs.body.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("keeps running when the client disconnects and stores the answer", async () => {
    const sid = await newSession();
    const answer = "This answer keeps streaming after the client has gone away.";
    h.fake.enqueue({ text: answer, chunkSize: 2, delayMs: 15 });
    const ac = new AbortController();
    const res = await fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "Tell me something long" }),
      signal: ac.signal,
    });
    const sse = new SseReader(res);
    await sse.until(sawToken);
    expect(sse.events.slice(0, 2).map((e) => e.event)).toEqual(["user-message", "token"]);
    ac.abort();
    await sse.cancel();

    const stored = await waitFor(
      () =>
        h.daemon.db
          .prepare("SELECT content, status FROM messages WHERE session_id = ? AND role = 'assistant'")
          .get(sid) as { content: string; status: string } | undefined,
    );
    expect(stored).toEqual({ content: answer, status: "ok" });
  });

  it("POST .../abort stops the running turn: the stream ends with done (aborted) and the partial text is stored", async () => {
    const sid = await newSession();
    const answer = "A very long answer that the user will stop before it is finished, word by word.";
    h.fake.enqueue({ text: answer, chunkSize: 2, delayMs: 20 });
    const idle = await api.req("POST", `/api/agents/main/sessions/${sid}/abort`);
    expect(idle.status).toBe(200);
    expect(idle.body).toEqual({ session_id: sid, aborted: false });

    const res = await fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "Tell me a long story" }),
    });
    const sse = new SseReader(res);
    const events = sse.events;
    expect(await sse.until(sawToken)).toBe(true);
    // Another turn's request id stops nothing; the stream's own does.
    const wrong = await api.req("POST", `/api/agents/main/sessions/${sid}/abort`, {
      request_id: "other",
    });
    expect(wrong.body).toEqual({ session_id: sid, aborted: false });
    const r = await api.req("POST", `/api/agents/main/sessions/${sid}/abort`, {
      request_id: res.headers.get("x-familiar-request-id"),
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ session_id: sid, aborted: true });
    await sse.until();
    const terminal = events.filter((e) => e.event === "done" || e.event === "error");
    expect(terminal.map((e) => e.event)).toEqual(["done"]);
    expect(terminal[0]?.data.finish_reason).toBe("aborted");
    const streamed = events.flatMap((e) => (e.event === "token" ? [String(e.data.delta)] : [])).join("");
    const message = terminal[0]?.data.message as { content: string; status: string };
    expect(message.status).toBe("aborted");
    expect(message.content.length).toBeGreaterThan(0);
    expect(message.content.length).toBeLessThan(answer.length);
    expect(answer.startsWith(message.content)).toBe(true);
    expect(streamed.startsWith(message.content)).toBe(true);
    const stored = h.daemon.db
      .prepare("SELECT content, status FROM messages WHERE session_id = ? AND role = 'assistant'")
      .get(sid);
    expect(stored).toEqual({ content: message.content, status: "aborted" });
    // Unknown sessions and another agent's path answer like every other session route.
    expect((await api.req("POST", `/api/agents/main/sessions/nope/abort`)).status).toBe(404);
  });

  it("DELETE of a session mid-turn stops the turn, ends its stream with done (aborted), and deletes everything", async () => {
    const sid = await newSession();
    h.fake.enqueue({
      text: "An answer that would go on for quite a while longer.",
      chunkSize: 2,
      delayMs: 20,
    });
    const res = await fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "Start something long" }),
    });
    const sse = new SseReader(res);
    const events = sse.events;
    expect(await sse.until(sawToken)).toBe(true);
    const deleted = await api.req("DELETE", `/api/agents/main/sessions/${sid}`);
    await sse.until();
    expect(deleted?.status).toBe(200);
    expect(deleted?.body).toMatchObject({ deleted: sid });
    const terminal = events.filter((e) => e.event === "done" || e.event === "error");
    expect(terminal.map((e) => [e.event, e.data.finish_reason])).toEqual([["done", "aborted"]]);
    const left = h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?").get(sid);
    expect(left).toEqual({ n: 0 });
    expect((await api.req("GET", `/api/agents/main/sessions/${sid}`)).status).toBe(404);
  });

  it("DELETE of an API agent mid-turn stops its running turn first (done, aborted)", async () => {
    expect((await api.req("POST", "/api/agents", { name: "temp-agent" })).status).toBe(201);
    const sid = (await api.req<{ id: string }>("POST", "/api/agents/temp-agent/sessions", {})).body.id;
    h.fake.enqueue({
      text: "Another answer that would take a good while to finish.",
      chunkSize: 2,
      delayMs: 20,
    });
    const res = await fetch(`${h.base}/api/agents/temp-agent/sessions/${sid}/messages/stream`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "Start" }),
    });
    const sse = new SseReader(res);
    const events = sse.events;
    expect(await sse.until(sawToken)).toBe(true);
    const deleted = await api.req("DELETE", "/api/agents/temp-agent");
    await sse.until();
    expect(deleted?.body).toEqual({ deleted: "temp-agent", sessions_deleted: 1 });
    const terminal = events.filter((e) => e.event === "done" || e.event === "error");
    expect(terminal.map((e) => [e.event, e.data.finish_reason])).toEqual([["done", "aborted"]]);
    const left = h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?").get(sid);
    expect(left).toEqual({ n: 0 });
  });

  it("streams a one-shot turn (POST /api/agents/{id}/chat/stream) without storing anything", async () => {
    const before = h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number };
    h.fake.enqueue({
      reasoning: "A clock question.",
      text: "Checking.",
      toolCalls: [{ id: "call_9", name: "current_time", arguments: {} }],
      chunkSize: 4,
    });
    h.fake.enqueue({ text: "Tea time, as before.", chunkSize: 4 });
    const { status, events, headers } = await api.stream("/api/agents/main/chat/stream", {
      message: "And the time now?",
      history: [
        { role: "user", content: "What time is it?" },
        { role: "assistant", content: "Tea time." },
      ],
    });
    expect(status).toBe(200);
    expect(runs(events)).toEqual([
      "thought",
      "token",
      "token-reset",
      "tool-call",
      "tool-result",
      "token",
      "done",
    ]);
    const done = events.at(-1)?.data;
    expect(done).toMatchObject({ agent_id: "main", reply: "Tea time, as before.", finish_reason: "stop" });
    expect(done?.request_id).toBe(headers.get("x-familiar-request-id"));
    expect(done?.sub_calls).toBe(3);
    const sent = (h.fake.requests[0]?.body?.messages ?? []).map((m) => [m.role, m.content]);
    expect(sent).toContainEqual(["assistant", "Tea time."]);
    const after = h.daemon.db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number };
    expect(after.n).toBe(before.n);
    // Validation errors are plain HTTP answers, before any stream.
    const bad = await api.stream("/api/agents/nobody/chat/stream", { message: "hi" });
    expect(bad.status).toBe(404);
  });

  it("ends with exactly one error event when the model fails, and stores the error", async () => {
    const sid = await newSession();
    h.fake.enqueue({ error: { status: 400, message: "bad request upstream", code: "invalid_request" } });
    const { events } = await api.stream(`/api/agents/main/sessions/${sid}/messages/stream`, {
      message: "boom",
    });
    expect(events[0]?.event).toBe("user-message");
    const terminal = events.filter((e) => e.event === "done" || e.event === "error");
    expect(terminal.map((e) => e.event)).toEqual(["error"]);
    expect(events[events.length - 1]?.event).toBe("error");
    const err = terminal[0]?.data ?? {};
    expect(err.error).toMatchObject({ code: expect.stringMatching(/^model_/) });
    expect(err.message).toMatchObject({ role: "assistant", status: "error" });
  });

  it("redirects a stream to an archived session with 308 to the successor's stream URL", async () => {
    const sid = await newSession({ compact_strategy: "manual", compact_keep_last_n: 0 });
    h.fake.enqueue({ text: "first reply" });
    await api.req("POST", `/api/agents/main/sessions/${sid}/messages`, { message: "first" });
    h.fake.enqueue({ text: "Summary of the first exchange." });
    const c = await api.req<{ successor_session_id: string }>(
      "POST",
      `/api/agents/main/sessions/${sid}/compact`,
    );
    const successor = c.body.successor_session_id;
    h.fake.enqueue({ text: "second reply" });
    const res = await fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "second" }),
    });
    expect(res.redirected).toBe(true);
    expect(res.url).toBe(`${h.base}/api/agents/main/sessions/${successor}/messages/stream`);
    const events = parseSse(await res.text()).events;
    expect(events[0]?.data).toMatchObject({ message: { content: "second", session_id: successor } });
    expect(events[events.length - 1]).toMatchObject({
      event: "done",
      data: { message: { content: "second reply" } },
    });
  });
});
