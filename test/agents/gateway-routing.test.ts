/**
 * Routing on the gateway's websocket chat (a real in-process daemon, the fake model): the agent named in
 * the request > the session's `/agent` choice > `routing` (channel `gateway`, chat = session name) >
 * the default. The session key the server answers with names the agent that took the message.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "../gateway/harness.js";

const TOKEN = "gateway-routing-token";
let h: GatewayHarness;
let c: GatewayClient;
let events: ChatEventPayload[];

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: {
      agents: { helper: { model: "fake/helper-model" }, research: { model: "fake/research-model" } },
      routing: [
        { channel: "gateway", chat: "work", agent: "research" },
        { channel: "gateway", chat: "stale", agent: "removed-agent" },
      ],
    },
  });
  c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "routing-test" });
  c.on("chat", (p) => events.push(p as ChatEventPayload));
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});
beforeEach(() => {
  h.fake.reset();
  events = [];
});

/** Sends a message and returns the session key and the model that answered. */
async function send(sessionKey: string, agent?: string): Promise<{ key: string; model: string | undefined }> {
  const n = h.fake.requests.length;
  h.fake.enqueue({ text: "ok" });
  const r = await c.request<{ runId: string; sessionKey: string }>("chat.send", {
    sessionKey,
    message: "hello",
    ...(agent ? { agent } : {}),
  });
  await waitFor(() => events.find((e) => e.runId === r.runId && e.state === "final"));
  return { key: r.sessionKey, model: h.fake.requests.slice(n).at(-1)?.model };
}

/** Runs a chat command (answered directly, no model call) and returns its reply. */
async function command(sessionKey: string, message: string): Promise<string> {
  const r = await c.request<{ runId: string }>("chat.send", { sessionKey, message });
  const fin = await waitFor(() => events.find((e) => e.runId === r.runId && e.state === "final"));
  return fin.state === "final" ? fin.text : "";
}

/** One /v1 chat completion in the named session; returns the model that answered. */
async function v1(model: string, user: string): Promise<string | undefined> {
  const n = h.fake.requests.length;
  h.fake.enqueue({ text: "ok" });
  const r = await fetch(`${h.base}/v1/chat/completions`, {
    method: "POST",
    headers: h.headers(),
    body: JSON.stringify({ model, user, messages: [{ role: "user", content: "hello" }] }),
  });
  expect(r.status).toBe(200);
  return h.fake.requests.slice(n).at(-1)?.model;
}

describe("one session name, one agent on the websocket and on /v1 (issue 46)", () => {
  it("familiar routes a named session as chat.send does; familiar/<id> names the agent outright", async () => {
    // routing: chat "work" -> research, on both doors, into the same session.
    expect(await send("work")).toEqual({ key: "agent:research:gateway:work", model: "research-model" });
    expect(await v1("familiar", "work")).toBe("research-model");
    const sessions = h.daemon.db
      .prepare<[], { key: string }>("SELECT key FROM sessions WHERE key LIKE '%:gateway:work'")
      .all()
      .map((r) => r.key);
    expect(sessions).toEqual(["agent:research:gateway:work"]);
    // An explicit agent wins on both doors.
    expect(await v1("familiar/helper", "work")).toBe("helper-model");
    // A name with no rule: the default agent on both.
    expect((await send("plain")).key).toBe("agent:main:gateway:plain");
    expect(await v1("familiar", "plain")).toBe("test-model");
  });
});

describe("gateway routing", () => {
  it("request agent > /agent choice > routing > default", async () => {
    expect(await send("misc")).toEqual({ key: "agent:main:gateway:misc", model: "test-model" });
    expect(await send("work")).toEqual({ key: "agent:research:gateway:work", model: "research-model" });
    // A routing entry naming an undefined agent falls through to the default.
    expect(await send("stale")).toEqual({ key: "agent:main:gateway:stale", model: "test-model" });

    expect(await command("work", "/agent helper")).toBe("This chat now talks to agent helper.");
    expect(await send("work")).toEqual({ key: "agent:helper:gateway:work", model: "helper-model" });
    // The agent named in the request beats the chat's choice.
    expect(await send("work", "research")).toEqual({
      key: "agent:research:gateway:work",
      model: "research-model",
    });
    await command("work", "/agent default");
    expect(await send("work")).toEqual({ key: "agent:research:gateway:work", model: "research-model" });
  });
});
