/**
 * The OpenAI-compatible API driven by the official `openai` SDK against a real daemon whose model is
 * the fake OpenAI server.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "openai-api-token-xyz";
let h: GatewayHarness;
let client: OpenAI;

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: { agents: { helper: { description: "second agent" } } },
  });
  client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

describe("OpenAI-compatible API with the official SDK", () => {
  it("non-streaming: returns the reply with usage in OpenAI's shape", async () => {
    h.fake.enqueue({ text: "Paris.", usage: { prompt_tokens: 42, completion_tokens: 3, total_tokens: 45 } });
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "Capital of France?" },
      ],
    });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]?.message.content).toBe("Paris.");
    expect(r.choices[0]?.finish_reason).toBe("stop");
    expect(r.usage).toMatchObject({ prompt_tokens: 42, completion_tokens: 3, total_tokens: 45 });
    const sent = h.fake.requests[0]?.body?.messages ?? [];
    expect(JSON.stringify(sent)).toContain("Answer briefly.");
  });

  it("streaming: yields deltas that add up to the reply, then usage when asked", async () => {
    h.fake.enqueue({ text: "one two three four five", chunkSize: 4 });
    const stream = await client.chat.completions.create({
      model: "familiar",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "count" }],
    });
    let text = "";
    let chunks = 0;
    let finish: string | null | undefined;
    let usage: unknown;
    for await (const ch of stream) {
      chunks++;
      text += ch.choices[0]?.delta.content ?? "";
      if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason;
      if (ch.usage) usage = ch.usage;
    }
    expect(text).toBe("one two three four five");
    expect(chunks).toBeGreaterThan(3);
    expect(finish).toBe("stop");
    expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
  });

  it("stateless by default: the request's messages are the conversation, nothing is stored", async () => {
    h.fake.enqueue({ text: "You said blue." });
    await client.chat.completions.create({
      model: "familiar",
      messages: [
        { role: "user", content: "My colour is blue." },
        { role: "assistant", content: "Noted." },
        { role: "user", content: "What did I say?" },
      ],
    });
    const msgs = (h.fake.requests[0]?.body?.messages ?? []).map((m) => [m.role, m.content]);
    expect(msgs).toContainEqual(["user", "My colour is blue."]);
    expect(msgs).toContainEqual(["assistant", "Noted."]);
    const count = h.daemon.db
      .prepare(
        "SELECT COUNT(*) AS n FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.key LIKE '%:gateway:v1'",
      )
      .get() as { n: number };
    expect(count.n).toBe(0);
  });

  it("the user field runs a persistent session", async () => {
    h.fake.enqueue({ text: "first" }, { text: "second" });
    await client.chat.completions.create({
      model: "familiar/helper",
      user: "alice",
      messages: [{ role: "user", content: "remember 7" }],
    });
    await client.chat.completions.create({
      model: "familiar/helper",
      user: "alice",
      messages: [{ role: "user", content: "what number?" }],
    });
    const second = (h.fake.requests[1]?.body?.messages ?? []).map((m) => m.content);
    expect(second).toContain("remember 7");
    expect(second).toContain("first");
    const row = h.daemon.db
      .prepare(
        "SELECT COUNT(*) AS n FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ?",
      )
      .get("agent:helper:gateway:alice") as { n: number };
    expect(row.n).toBe(4);
  });

  it("lists models: familiar and familiar/<agent>", async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(["familiar", "familiar/main", "familiar/helper"]));
  });

  it("errors map to the SDK's exception classes", async () => {
    const bad = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: "wrong-token", maxRetries: 0 });
    await expect(
      bad.chat.completions.create({ model: "familiar", messages: [{ role: "user", content: "x" }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(
      client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.chat.completions.create({
        model: "familiar/nobody",
        messages: [{ role: "user", content: "x" }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const br = await client.chat.completions
      .create({ model: "familiar", messages: [{ role: "assistant", content: "x" }] })
      .catch((e: unknown) => e);
    expect(br).toBeInstanceOf(OpenAI.BadRequestError);
    expect((br as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages.0.role");
    h.fake.enqueue({ error: { status: 500, message: "upstream exploded" } });
    await expect(
      client.chat.completions.create({ model: "familiar", messages: [{ role: "user", content: "x" }] }),
    ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
  });

  it("usage sums every model call of the turn (tool round trips included), streaming and not", async () => {
    const steps = () =>
      h.fake.enqueue(
        {
          toolCalls: [{ name: "current_time", arguments: {} }],
          usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
        },
        { text: "It is noon.", usage: { prompt_tokens: 130, completion_tokens: 5, total_tokens: 135 } },
      );
    steps();
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [{ role: "user", content: "time?" }],
    });
    expect(r.choices[0]?.message.content).toBe("It is noon.");
    expect(r.usage).toMatchObject({ prompt_tokens: 230, completion_tokens: 15, total_tokens: 245 });
    expect(h.fake.requests.length).toBe(2);

    steps();
    const stream = await client.chat.completions.create({
      model: "familiar",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "time?" }],
    });
    let text = "";
    let usage: unknown;
    for await (const ch of stream) {
      text += ch.choices[0]?.delta.content ?? "";
      if (ch.usage) usage = ch.usage;
    }
    expect(text).toBe("It is noon.");
    expect(usage).toMatchObject({ prompt_tokens: 230, completion_tokens: 15, total_tokens: 245 });
  });

  it("the X-Familiar-Session header runs a persistent session too", async () => {
    h.fake.enqueue({ text: "noted" }, { text: "you said 9" });
    const opts = { headers: { "X-Familiar-Session": "bob" } };
    await client.chat.completions.create(
      { model: "familiar", messages: [{ role: "user", content: "remember 9" }] },
      opts,
    );
    await client.chat.completions.create(
      { model: "familiar", messages: [{ role: "user", content: "which number?" }] },
      opts,
    );
    const second = (h.fake.requests[1]?.body?.messages ?? []).map((m) => m.content);
    expect(second).toContain("remember 9");
    expect(second).toContain("noted");
    const row = h.daemon.db
      .prepare(
        "SELECT COUNT(*) AS n FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ?",
      )
      .get("agent:main:gateway:bob") as { n: number };
    expect(row.n).toBe(4);
  });
});
