/**
 * Issue 46 item 7: a dispatch's progress lines reach the surfaces that have no chat channel. The real
 * daemon and gateway on 127.0.0.1, the fake model playing the primary agent and a worker: a websocket
 * client sees `notice` chat events of kind `dispatch_progress` (sync, and a background dispatch after
 * its turn ended), an `/api` session stream gets `notice` SSE events, the chunk vocabulary marks them
 * as notices, and `/api/agents/:id/chat/stream` carries them too.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import type { FakeStep } from "../fakes/openai-server.js";
import { apiClient, type ApiClient, type SseEvent } from "../api/api-client.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "dispatch-progress-token";
let h: GatewayHarness;
let api: ApiClient;

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { agents: { default: "main", main: {}, worker: { model: "fake/worker-model" } } },
  });
  api = apiClient(h.base, TOKEN);
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.fake.reset();
  // The worker answers each task by its name (every task message starts with `task <name>`).
  h.fake.setHandler((req): FakeStep | undefined => {
    if (req.model !== "worker-model") return undefined;
    const body = req.body?.messages ?? [];
    const last = body.filter((m) => m.role === "user").at(-1);
    const name = /task (\w+)/.exec(String(last?.content ?? ""))?.[1] ?? "?";
    return { text: `${name} result` };
  });
});

const tasks = [
  { id: "a", agent: "worker", message: "task a: gather" },
  { id: "b", agent: "worker", message: "task b: use {{a.output}}", depends_on: ["a"] },
];
const LINES = ["Dispatching 2 tasks: a, b", "✓ a done (worker)", "✓ b done (worker)"];

/** The main model dispatches `args`, then answers `done`. */
function dispatchTurn(args: Record<string, unknown>, done = "All done."): void {
  h.fake.enqueue(
    { model: "test-model", toolCalls: [{ name: "dispatch", arguments: args }] },
    { model: "test-model", text: done },
  );
}

async function connect(): Promise<{ client: GatewayClient; chat: ChatEventPayload[] }> {
  const client = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "progress" });
  const chat: ChatEventPayload[] = [];
  client.on("chat", (p) => chat.push(p as ChatEventPayload));
  return { client, chat };
}

const notices = (chat: ChatEventPayload[], sessionKey: string): string[] =>
  chat.flatMap((e) =>
    e.state === "notice" && e.sessionKey === sessionKey && e.kind === "dispatch_progress" ? [e.text] : [],
  );
const sseNotices = (events: SseEvent[]): string[] =>
  events
    .filter((e) => e.event === "notice" && e.data.kind === "dispatch_progress")
    .map((e) => String(e.data.text));

describe("dispatch progress without a chat channel", () => {
  it("reaches a websocket client as notice events of the turn", async () => {
    const { client, chat } = await connect();
    try {
      dispatchTurn({ tasks });
      const r = await client.request<{ runId: string; sessionKey: string }>("chat.send", {
        sessionKey: "ws-dispatch",
        message: "run the graph",
      });
      await waitFor(() => chat.find((e) => e.runId === r.runId && e.state === "final"));
      expect(notices(chat, r.sessionKey)).toEqual(LINES);
      // They belong to the turn that dispatched (its run id), before its final answer.
      const ofRun = chat.filter((e) => e.runId === r.runId).map((e) => e.state);
      expect(ofRun.indexOf("notice")).toBeLessThan(ofRun.indexOf("final"));
    } finally {
      await client.close();
    }
  });

  it("reaches a websocket client from a background dispatch after its turn ended", async () => {
    const { client, chat } = await connect();
    try {
      dispatchTurn({ tasks, mode: "background" }, "Started.");
      h.fake.enqueue({ model: "test-model", text: "Your graph is done." });
      const r = await client.request<{ runId: string; sessionKey: string }>("chat.send", {
        sessionKey: "ws-background",
        message: "run it in the background",
      });
      await waitFor(() => notices(chat, r.sessionKey).length === 3);
      const [first, ...rest] = notices(chat, r.sessionKey);
      expect(first).toMatch(/^Dispatching 2 tasks in the background \(task \w+\): a, b$/);
      expect(rest).toEqual(LINES.slice(1));
      await waitFor(() => chat.find((e) => e.state === "final" && e.text === "Your graph is done."));
    } finally {
      await client.close();
    }
  });

  it("reaches an /api session stream as notice events, and the chunk vocabulary as notices", async () => {
    const sid = (await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {})).body.id;
    dispatchTurn({ tasks });
    const plain = await api.stream(`/api/agents/main/sessions/${sid}/messages/stream`, { message: "go" });
    expect(plain.status).toBe(200);
    expect(sseNotices(plain.events)).toEqual(LINES);
    expect(plain.events.at(-1)?.event).toBe("done");

    dispatchTurn({ tasks });
    const chunks = await api.stream(`/api/agents/main/sessions/${sid}/messages/stream?vocabulary=chunks`, {
      message: "again",
    });
    const marked = JSON.stringify(chunks.events);
    for (const line of LINES) expect(marked).toContain(line);
    expect(marked).toContain("dispatch_progress");
  });

  it("reaches the one-shot /api/agents/:id/chat/stream", async () => {
    dispatchTurn({ tasks });
    const r = await api.stream("/api/agents/main/chat/stream", { message: "go" });
    expect(r.status).toBe(200);
    expect(sseNotices(r.events)).toEqual(LINES);
  });
});
