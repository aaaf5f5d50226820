/**
 * The `/api` error codes that depend on the model setup: 422 `llm_provider_unsupported` and
 * `llm_credential_missing` for agents bound to unusable providers, 503 `chat_disabled` when no provider
 * is configured at all; plus the 404s. Nothing reaches the model and nothing is stored when refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import { apiClient, type ApiClient } from "./api-client.js";

const TOKEN = "api-errors-token";

describe("/api model availability errors", () => {
  let h: GatewayHarness;
  let api: ApiClient;
  beforeAll(async () => {
    h = await startGatewayDaemon({
      gateway: { token: TOKEN },
      config: {
        agents: {
          default: "main",
          main: {},
        },
      },
    });
    api = apiClient(h.base, TOKEN);
    // config.yaml refuses a model of a provider not configured (config/model-provider-check.ts); an
    // API agent can still name one, and every door answers 422 for it.
    const created = await api.req("POST", "/api/agents", { name: "ghostly", model: "nowhere/model-x" });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("422 llm_provider_unsupported for an agent whose provider is not configured", async () => {
    const before = h.fake.requests.length;
    const chat = await api.req("POST", "/api/agents/ghostly/chat", { message: "hi" });
    expect(chat.status).toBe(422);
    expect(chat.body).toMatchObject({ error: { code: "llm_provider_unsupported" } });
    expect((chat.body.error as { message: string }).message).toContain("nowhere");
    const s = await api.req<{ id: string }>("POST", "/api/agents/ghostly/sessions", {});
    const post = await api.req("POST", `/api/agents/ghostly/sessions/${s.body.id}/messages`, {
      message: "hi",
    });
    expect(post.status).toBe(422);
    const stream = await api.stream(`/api/agents/ghostly/sessions/${s.body.id}/messages/stream`, {
      message: "hi",
    });
    expect(stream.status).toBe(422);
    expect(h.fake.requests.length).toBe(before);
    expect(
      (await api.req<{ message_count: number }>("GET", `/api/agents/ghostly/sessions/${s.body.id}`)).body
        .message_count,
    ).toBe(0);
  });

  it("404 agent_not_found and session_not_found", async () => {
    expect((await api.req("GET", "/api/agents/nobody")).body).toMatchObject({
      error: { code: "agent_not_found" },
    });
    expect((await api.req("POST", "/api/agents/nobody/sessions", {})).status).toBe(404);
    const s = await api.req("GET", "/api/agents/main/sessions/00000000-0000-0000-0000-000000000000");
    expect(s.status).toBe(404);
    expect(s.body).toMatchObject({ error: { code: "session_not_found" } });
    const t = await api.req("GET", "/api/traces/no-such-request");
    expect(t.status).toBe(404);
    expect(t.body).toMatchObject({ error: { code: "trace_not_found" } });
  });
});

describe("/api credential and chat-disabled errors", () => {
  it("422 llm_credential_missing for a remote provider without api_key; loopback providers need none", async () => {
    const fake = await startFakeOpenAI();
    const h = await startGatewayDaemon({
      fake,
      gateway: { token: TOKEN },
      config: {
        models: {
          providers: {
            fake: { base_url: fake.baseUrl }, // loopback, no key: fine
            remote: { base_url: "https://llm.example.invalid/v1" },
          },
          primary: "fake/test-model",
          max_retries: 0,
        },
        agents: { default: "main", main: {}, keyless: { model: "remote/big-model" } },
      },
    });
    try {
      const api = apiClient(h.base, TOKEN);
      const r = await api.req("POST", "/api/agents/keyless/chat", { message: "hi" });
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ error: { code: "llm_credential_missing" } });
      expect((r.body.error as { message: string }).message).toContain("models.providers.remote.api_key");
      expect(fake.requests).toHaveLength(0);
      fake.enqueue({ text: "local ok" });
      const ok = await api.req("POST", "/api/agents/main/chat", { message: "hi" });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ reply: "local ok" });
    } finally {
      await h.close();
      await fake.close();
    }
  });

  it("503 chat_disabled when no model provider is configured at all", async () => {
    const h = await startGatewayDaemon({
      gateway: { token: TOKEN },
      config: { models: { providers: {} }, agents: { default: "main", main: {} } },
    });
    try {
      const api = apiClient(h.base, TOKEN);
      const r = await api.req("POST", "/api/agents/main/chat", { message: "hi" });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ error: { code: "chat_disabled" } });
      const s = await api.req<{ id: string }>("POST", "/api/agents/main/sessions", {});
      const post = await api.req("POST", `/api/agents/main/sessions/${s.body.id}/messages`, {
        message: "hi",
      });
      expect(post.status).toBe(503);
      expect(post.body).toMatchObject({ error: { code: "chat_disabled" } });
      // Reading still works.
      expect((await api.req("GET", "/api/agents")).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});
