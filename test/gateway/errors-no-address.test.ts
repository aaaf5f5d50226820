/**
 * Issue 46 item 6: a model provider that cannot be reached (connection refused on 127.0.0.1, a host
 * name that does not resolve) fails the turn, and what API clients get (`/v1/chat/completions`,
 * `/v1/responses`, `/api`, the websocket) and what a failed dispatch task hands the model never name
 * the provider's URL, host or port. The owner's log keeps them. A real daemon, the fake OpenAI server
 * for the agent that dispatches.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { apiClient } from "../api/api-client.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import { freePort, startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const TOKEN = "errors-no-address-token";
const DNS_HOST = "gpu-box.corp.invalid";
let h: GatewayHarness;
let closedPort: number;

beforeAll(async () => {
  closedPort = await freePort(); // free a moment ago, and nothing listens on it: ECONNREFUSED
  const fake = await startFakeOpenAI();
  h = await startGatewayDaemon({
    fake,
    gateway: { token: TOKEN },
    config: {
      models: {
        providers: {
          boss: { base_url: fake.baseUrl, api_key: "sk-fake" },
          down: { base_url: `http://127.0.0.1:${closedPort}/v1`, api_key: "sk-x" },
          gpu: { base_url: `http://${DNS_HOST}:8443/v1`, api_key: "sk-x" },
        },
        primary: "down/m",
        max_retries: 0,
        timeout_s: 10,
      },
      agents: { main: {}, dns: { model: "gpu/m" }, boss: { model: "boss/boss-model" } },
    },
  });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await h?.fake.close();
});

/** Fails when `text` names the unreachable providers' addresses. */
function expectNoAddress(text: string): void {
  expect(text).not.toContain(String(closedPort));
  expect(text).not.toContain("127.0.0.1");
  expect(text).not.toContain(DNS_HOST);
  expect(text).not.toContain("8443");
}

const post = (path: string, body: object): Promise<Response> =>
  fetch(`${h.base}${path}`, { method: "POST", headers: h.headers(), body: JSON.stringify(body) });

describe("network errors returned to API clients name no address", () => {
  it("/v1/chat/completions, plain and streamed, for a refused connection and an unknown host", async () => {
    for (const model of ["familiar", "familiar/dns"]) {
      for (const stream of [false, true]) {
        const r = await post("/v1/chat/completions", {
          model,
          stream,
          messages: [{ role: "user", content: "hi" }],
        });
        const text = await r.text();
        expect(text).toMatch(/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|cannot reach/);
        expectNoAddress(text);
      }
    }
  });

  it("/v1/responses", async () => {
    for (const model of ["familiar", "familiar/dns"]) {
      const r = await post("/v1/responses", { model, input: "hi" });
      expect(r.status).toBeGreaterThanOrEqual(500);
      const text = await r.text();
      expect(text).toMatch(/cannot reach/);
      expectNoAddress(text);
    }
  });

  it("/api messages, and the transcript read back", async () => {
    const api = apiClient(h.base, TOKEN);
    for (const agent of ["main", "dns"]) {
      const s = await api.req<{ id: string }>("POST", `/api/agents/${agent}/sessions`, {});
      const r = await api.req("POST", `/api/agents/${agent}/sessions/${s.body.id}/messages`, {
        message: "hi",
      });
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(JSON.stringify(r.body)).toMatch(/cannot reach/);
      expectNoAddress(JSON.stringify(r.body));
      const back = await api.req("GET", `/api/agents/${agent}/sessions/${s.body.id}/messages`);
      expectNoAddress(JSON.stringify(back.body));
    }
  });

  it("the websocket: the chat.send result and the chat event", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "errors-test" });
    const events: ChatEventPayload[] = [];
    c.on("chat", (p) => events.push(p as ChatEventPayload));
    try {
      const r = await c.request<{ runId: string; result: unknown }>("chat.send", {
        sessionKey: "down",
        message: "hi",
        wait: true,
      });
      expect(JSON.stringify(r.result)).toMatch(/cannot reach/);
      expectNoAddress(JSON.stringify(r.result));
      const fin = await waitFor(() => events.find((e) => e.runId === r.runId && e.state === "error"));
      expectNoAddress(JSON.stringify(fin));
    } finally {
      await c.close();
    }
  });

  it("a failed dispatch task hands the model no address; the owner's log keeps it", async () => {
    h.fake.enqueue(
      {
        model: "boss-model",
        toolCalls: [
          {
            name: "dispatch",
            arguments: {
              tasks: [
                { id: "a", agent: "main", message: "task a", blocking: false },
                { id: "b", agent: "dns", message: "task b", blocking: false },
              ],
            },
          },
        ],
      },
      { model: "boss-model", text: "Both failed." },
    );
    const r = await post("/v1/chat/completions", {
      model: "familiar/boss",
      messages: [{ role: "user", content: "run both" }],
    });
    expect(r.status).toBe(200);
    const toolMsgs = (h.fake.requests[1]?.body?.messages ?? []).filter(
      (m) => (m as { role: string }).role === "tool",
    );
    const handed = JSON.stringify(toolMsgs);
    expect(handed).toMatch(/failed/);
    expect(handed).toMatch(/cannot reach/);
    expectNoAddress(handed);
    const log = h.logs().join("\n");
    expect(log).toContain(`127.0.0.1:${closedPort}`);
    expect(log).toContain(DNS_HOST);
  });
});
