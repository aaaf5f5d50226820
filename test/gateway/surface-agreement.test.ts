/**
 * Issue 34 item 8: the surfaces agree. The `/api` stream's `done` message shows usage in the same
 * snake_case shape as the totals; ws `sessions.compact` with nothing to compact answers `conflict`
 * (REST: 409 `nothing_to_compact`); 429 and 502 answers to API clients pass the upstream's
 * `Retry-After` on and do not show the upstream's base URL.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GatewayClient, GatewayClientError } from "../../internal/gateway/client.js";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "surface-token-0123456789";
let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${h.base}${path}`, { method: "POST", headers: h.headers(), body: JSON.stringify(body) });

async function newSession(title: string): Promise<string> {
  const r = await post("/api/agents/main/sessions", { title });
  return ((await r.json()) as { id: string }).id;
}

describe("one vocabulary on every surface", () => {
  it("the /api stream's done message carries usage in snake_case, like the totals", async () => {
    const sid = await newSession("usage-shape");
    h.fake.enqueue({
      text: "ok",
      usage: {
        prompt_tokens: 10,
        completion_tokens: 2,
        total_tokens: 12,
        prompt_tokens_details: { cached_tokens: 4 },
      },
    });
    const r = await post(`/api/agents/main/sessions/${sid}/messages/stream`, { message: "hi" });
    const text = await r.text();
    const done = text
      .split("\n\n")
      .find((b) => b.includes("event: done"))!
      .split("\n")
      .find((l) => l.startsWith("data: "))!;
    const payload = JSON.parse(done.slice(6)) as {
      message: { usage: Record<string, number> };
      usage: Record<string, number>;
    };
    expect(Object.keys(payload.message.usage)).toEqual(Object.keys(payload.usage));
    expect(payload.message.usage).toMatchObject({ input: 10, output: 2, cache_read: 4 });
    expect(JSON.stringify(payload)).not.toContain("cacheRead");
  });

  it("ws sessions.compact with nothing to compact answers conflict, as REST answers 409", async () => {
    const c = await GatewayClient.connect({ url: h.wsUrl, token: TOKEN, clientName: "surface" });
    try {
      h.fake.enqueue({ text: "hello" });
      await c.request("chat.send", { sessionKey: "tiny", message: "hi", idempotencyKey: "surface-1" });
      await new Promise((r) => setTimeout(r, 200));
      const err = await c.request("sessions.compact", { sessionKey: "tiny" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayClientError);
      expect((err as GatewayClientError).code).toBe("conflict");
      expect((err as Error).message).toMatch(/^nothing_to_compact: /);
    } finally {
      await c.close();
    }
  });

  it("/v1: a 429 passes Retry-After on and hides the upstream URL", async () => {
    h.fake.enqueue({ error: { status: 429, message: "slow down", retryAfter: 7 } });
    const r = await post("/v1/chat/completions", {
      model: "familiar",
      messages: [{ role: "user", content: "x" }],
    });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("7");
    const body = await r.text();
    expect(body).not.toContain(h.fake.baseUrl);
    expect(body).not.toMatch(/127\.0\.0\.1:\d+/);
  });

  it("/v1 and /api: a 502 hides the upstream URL", async () => {
    h.fake.enqueue({ error: { status: 500, message: "boom" } });
    const v1 = await post("/v1/chat/completions", {
      model: "familiar",
      messages: [{ role: "user", content: "x" }],
    });
    expect(v1.status).toBe(502);
    expect(await v1.text()).not.toMatch(/127\.0\.0\.1:\d+/);
    const sid = await newSession("upstream-502");
    h.fake.enqueue({ error: { status: 500, message: "boom" } });
    const api = await post(`/api/agents/main/sessions/${sid}/messages`, { message: "x" });
    expect(api.status).toBe(502);
    const text = await api.text();
    expect(text).not.toMatch(/127\.0\.0\.1:\d+/);
    expect(text).toContain("(the model provider)");
  });

  it("/api: a 429 passes Retry-After on", async () => {
    const sid = await newSession("upstream-429");
    h.fake.enqueue({ error: { status: 429, retryAfter: 9 } });
    const r = await post(`/api/agents/main/sessions/${sid}/messages`, { message: "x" });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("9");
  });
});
