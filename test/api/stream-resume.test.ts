/**
 * Resuming an `/api` turn stream over real HTTP (`GET .../messages/stream` with `Last-Event-ID`): a
 * client that lost its connection mid-turn gets the rest of a still-running turn (replayed, then
 * live) and of a just-finished one, each event exactly once, with the same ids; 204 when nothing is
 * left; 404 / 400 for unknown turns and bad ids.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import { apiClient, parseSse, sawToken, SseReader, type ApiClient, type SseEvent } from "./api-client.js";

const TOKEN = "api-resume-token";
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

const newSession = async (): Promise<string> =>
  (await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {})).body.id;

const tokens = (events: SseEvent[]): string =>
  events.flatMap((e) => (e.event === "token" ? [String(e.data.delta)] : [])).join("");

const resume = (sid: string, query: string, lastEventId?: string): Promise<Response> =>
  fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream${query}`, {
    headers: { ...api.headers(), ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}) },
  });

describe("/api SSE resume with Last-Event-ID", () => {
  it("gives a client that reconnects mid-turn the rest of the running turn, each event once", async () => {
    const sid = await newSession();
    const text = "A partial answer, streamed before the model stalls.";
    // The model streams the text and then hangs: the turn is certainly still running on reconnect.
    h.fake.enqueue({ hang: true, text });
    const ac = new AbortController();
    const first = await fetch(`${h.base}/api/agents/main/sessions/${sid}/messages/stream`, {
      method: "POST",
      headers: api.headers(),
      body: JSON.stringify({ message: "Say something long" }),
      signal: ac.signal,
    });
    const requestId = first.headers.get("x-familiar-request-id") ?? "";
    expect(requestId).not.toBe("");
    const firstReader = new SseReader(first);
    await firstReader.until(sawToken);
    const seen = firstReader.events;
    ac.abort(); // the connection drops; the turn goes on
    // The client got as far as the first token (whatever else was in flight is lost with the
    // connection), so the rest of the text must come from the replay.
    seen.splice(seen.findIndex((e) => e.event === "token") + 1);
    const lastSeen = seen[seen.length - 1]?.id ?? 0;
    expect(tokens(seen).length).toBeLessThan(text.length);
    expect(seen[0]).toMatchObject({ event: "user-message", id: 1 });

    const again = await resume(sid, `?request_id=${requestId}`, String(lastSeen));
    expect(again.status).toBe(200);
    expect(again.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(again.headers.get("x-familiar-request-id")).toBe(requestId);
    const againReader = new SseReader(again);
    const rest = againReader.events;
    // Replayed and live events until the whole streamed text is there; the turn still runs.
    expect(await againReader.until((ev) => tokens([...seen, ...ev]) === text)).toBe(true);
    expect(rest.some((e) => e.event === "done" || e.event === "error")).toBe(false);
    const stop = await api.req("POST", `/api/agents/main/sessions/${sid}/abort`, { request_id: requestId });
    expect(stop.body).toEqual({ session_id: sid, aborted: true });
    expect(await againReader.until()).toBe(false); // read to the end

    // Together the two connections carry ids 1..N, each once, ending in one terminal done.
    const all = [...seen, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(tokens(all)).toBe(text);
    const terminal = all.filter((e) => e.event === "done" || e.event === "error");
    expect(terminal).toHaveLength(1);
    expect(terminal[0]).toMatchObject({
      event: "done",
      data: { finish_reason: "aborted", message: { role: "assistant", status: "aborted" } },
    });
    expect(all[all.length - 1]?.event).toBe("done");
  });

  it("replays a just-finished turn after Last-Event-ID; 204 when nothing is left; 404/400 otherwise", async () => {
    const sid = await newSession();
    h.fake.enqueue({
      text: "Checking.",
      toolCalls: [{ id: "call_1", name: "current_time", arguments: {} }],
      chunkSize: 4,
    });
    h.fake.enqueue({ text: "It is time for tea.", chunkSize: 4 });
    const original = await api.stream(`/api/agents/main/sessions/${sid}/messages/stream`, {
      message: "What time is it?",
    });
    const requestId = original.headers.get("x-familiar-request-id") ?? "";
    const n = original.events.length;
    expect(original.events.map((e) => e.id)).toEqual(original.events.map((_, i) => i + 1));
    expect(original.events[n - 1]?.event).toBe("done");

    const after3 = await resume(sid, `?request_id=${requestId}`, "3");
    expect(after3.status).toBe(200);
    expect(parseSse(await after3.text()).events).toEqual(original.events.slice(3));
    // Without request_id: the session's newest streamed turn; the id may come as a query parameter.
    const byQuery = await resume(sid, "?last_event_id=5");
    expect(parseSse(await byQuery.text()).events).toEqual(original.events.slice(5));
    const whole = await resume(sid, "");
    expect(parseSse(await whole.text()).events).toEqual(original.events);

    // Everything seen and the turn over: 204, which tells EventSource to stop reconnecting.
    const nothing = await resume(sid, `?request_id=${requestId}`, String(n));
    expect(nothing.status).toBe(204);
    expect(await nothing.text()).toBe("");

    const unknown = await resume(sid, "?request_id=not-a-turn", "1");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: "stream_not_found" } });
    // Another session's turn is not reachable through this one.
    const other = await newSession();
    const wrong = await resume(other, `?request_id=${requestId}`, "1");
    expect(wrong.status).toBe(404);
    expect(await wrong.json()).toMatchObject({ error: { code: "stream_not_found" } });
    const none = await resume(other, "");
    expect(none.status).toBe(404);
    const bad = await resume(sid, `?request_id=${requestId}`, "abc");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_query", field: "last_event_id" } });
    const beyond = await resume(sid, `?request_id=${requestId}`, String(n + 5));
    expect(beyond.status).toBe(400);
    await beyond.text();
  });
});
