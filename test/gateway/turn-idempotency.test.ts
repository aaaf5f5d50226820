/**
 * Issue 34 item 2: retries never answer twice. The official `openai` SDK retries a request that got
 * a 5xx; it marks each attempt with `X-Stainless-Retry-Count` and sends no idempotency key. Against
 * a real daemon whose model (the fake OpenAI server) fails once with 500, the SDK's own retry must
 * leave the user message in the session once and the model must see it once. `Idempotency-Key` on
 * `/v1` and `/api` returns the first answer for a repeat (or joins it while it runs), refuses a key
 * reused for another body, and survives a daemon restart.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "idem-token-0123456789";
let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

function userRows(key: string): string[] {
  return (
    h.daemon.db
      .prepare(
        "SELECT m.content FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? AND m.role = 'user' ORDER BY m.id",
      )
      .all(key) as { content: string }[]
  ).map((r) => r.content);
}

const modelCalls = (): number => h.fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;

describe("the openai SDK's automatic retry", () => {
  it("after one upstream 500 the retry answers, the message is stored once and the model saw it once", async () => {
    h.fake.enqueue({ error: { status: 500, message: "upstream hiccup" } }, { text: "Twelve." });
    const client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 2 });
    const r = await client.chat.completions.create({
      model: "familiar",
      user: "retry-bob",
      messages: [{ role: "user", content: "How many months have 28 days?" }],
    });
    expect(r.choices[0]?.message.content).toBe("Twelve.");
    expect(userRows("agent:main:gateway:retry-bob")).toEqual(["How many months have 28 days?"]);
    expect(modelCalls()).toBe(2);
    const seen = (h.fake.requests[1]?.body?.messages ?? []).filter(
      (m) => m.role === "user" && m.content === "How many months have 28 days?",
    );
    expect(seen).toHaveLength(1);
  });

  it("a streamed call is retried the same way", async () => {
    h.fake.enqueue({ error: { status: 500 } }, { text: "Blue.", chunkSize: 2 });
    const client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 2 });
    const stream = await client.chat.completions.create({
      model: "familiar",
      user: "retry-sue",
      stream: true,
      messages: [{ role: "user", content: "Colour of the sky?" }],
    });
    let text = "";
    for await (const ch of stream) text += ch.choices[0]?.delta.content ?? "";
    expect(text).toBe("Blue.");
    expect(userRows("agent:main:gateway:retry-sue")).toEqual(["Colour of the sky?"]);
  });

  it("the same words sent again on purpose (a first attempt) are a new message", async () => {
    h.fake.enqueue({ text: "one" }, { text: "two" });
    const client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 2 });
    for (let i = 0; i < 2; i++)
      await client.chat.completions.create({
        model: "familiar",
        user: "retry-twice",
        messages: [{ role: "user", content: "again" }],
      });
    expect(userRows("agent:main:gateway:retry-twice")).toEqual(["again", "again"]);
  });
});

describe("Idempotency-Key", () => {
  const post = (path: string, body: unknown, key?: string): Promise<Response> =>
    fetch(`${h.base}${path}`, {
      method: "POST",
      headers: h.headers(key !== undefined ? { "idempotency-key": key } : {}),
      body: JSON.stringify(body),
    });

  it("/v1: a repeat returns the first answer without a second turn", async () => {
    h.fake.enqueue({ text: "Forty-two." });
    const body = { model: "familiar", user: "idem-v1", messages: [{ role: "user", content: "answer?" }] };
    const a = await post("/v1/chat/completions", body, "k-v1-1");
    const b = await post("/v1/chat/completions", body, "k-v1-1");
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    const ja = (await a.json()) as { id: string; choices: { message: { content: string } }[] };
    const jb = (await b.json()) as typeof ja;
    expect(jb.choices[0]!.message.content).toBe("Forty-two.");
    expect(jb.id).toBe(ja.id);
    expect(modelCalls()).toBe(1);
    expect(userRows("agent:main:gateway:idem-v1")).toEqual(["answer?"]);
  });

  it("/v1: a repeat while the first still runs joins it", async () => {
    h.fake.enqueue({ text: "slow answer", delayMs: 300 });
    const body = { model: "familiar", user: "idem-join", messages: [{ role: "user", content: "slow?" }] };
    const [a, b] = await Promise.all([
      post("/v1/chat/completions", body, "k-join"),
      new Promise((r) => setTimeout(r, 50)).then(() => post("/v1/chat/completions", body, "k-join")),
    ]);
    const texts = await Promise.all(
      [a, b].map(
        async (r) => ((await r.json()) as { choices: { message: { content: string } }[] }).choices[0]!,
      ),
    );
    expect(texts.map((t) => t.message.content)).toEqual(["slow answer", "slow answer"]);
    expect(modelCalls()).toBe(1);
    expect(userRows("agent:main:gateway:idem-join")).toEqual(["slow?"]);
  });

  it("a key reused for another request is refused with 422, naming the header", async () => {
    h.fake.enqueue({ text: "x" });
    const base = { model: "familiar", user: "idem-reuse" };
    await post("/v1/chat/completions", { ...base, messages: [{ role: "user", content: "one" }] }, "k-re");
    const r = await post(
      "/v1/chat/completions",
      { ...base, messages: [{ role: "user", content: "two" }] },
      "k-re",
    );
    expect(r.status).toBe(422);
    const j = (await r.json()) as { error: { code: string; param: string } };
    expect(j.error).toMatchObject({ code: "idempotency_key_reused", param: "Idempotency-Key" });
    expect(userRows("agent:main:gateway:idem-reuse")).toEqual(["one"]);
  });

  it("a malformed key is a 400 naming the header, and nothing is stored", async () => {
    const r = await post(
      "/v1/chat/completions",
      { model: "familiar", user: "idem-bad", messages: [{ role: "user", content: "hi" }] },
      "x".repeat(300),
    );
    expect(r.status).toBe(400);
    expect(await r.text()).toMatch(/Idempotency-Key: expected 1 to 255/);
    expect(userRows("agent:main:gateway:idem-bad")).toEqual([]);
  });

  it("/api session messages: a repeat after a failed turn reruns it on the stored message; after that it replays", async () => {
    const created = await post("/api/agents/main/sessions", { title: "idem-api" });
    expect(created.status).toBe(201);
    const sid = ((await created.json()) as { id: string }).id;
    h.fake.enqueue({ error: { status: 500 } }, { text: "Recovered." });
    const path = `/api/agents/main/sessions/${sid}/messages`;
    const first = await post(path, { message: "status?" }, "k-api-1");
    expect(first.status).toBeGreaterThanOrEqual(500);
    const second = await post(path, { message: "status?" }, "k-api-1");
    expect(second.status).toBe(200);
    const j = (await second.json()) as { assistant: { content: string }; user: { content: string } };
    expect(j.assistant.content).toBe("Recovered.");
    expect(j.user.content).toBe("status?");
    const third = await post(path, { message: "status?" }, "k-api-1");
    expect(third.headers.get("idempotent-replayed")).toBe("true");
    expect(((await third.json()) as typeof j).assistant.content).toBe("Recovered.");
    expect(modelCalls()).toBe(2);
    const rows = h.daemon.db
      .prepare("SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND role = 'user'")
      .get(sid) as { n: number };
    expect(rows.n).toBe(1);
  });

  it("survives a daemon restart", async () => {
    h.fake.enqueue({ text: "Persisted." });
    const body = { model: "familiar", user: "idem-restart", messages: [{ role: "user", content: "keep?" }] };
    const a = await post("/v1/chat/completions", body, "k-restart");
    expect(a.status).toBe(200);
    await h.restart();
    const b = await post("/v1/chat/completions", body, "k-restart");
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(
      ((await b.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
    ).toBe("Persisted.");
    expect(modelCalls()).toBe(1);
  });
});
