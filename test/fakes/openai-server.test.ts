import { afterEach, beforeEach, describe, expect, it } from "vitest";
import OpenAI, { APIError } from "openai";
import { spawn } from "node:child_process";
import { contextOverflowStep, startFakeOpenAI, type FakeOpenAI } from "./openai-server.js";

let fake: FakeOpenAI;
let client: OpenAI;

beforeEach(async () => {
  fake = await startFakeOpenAI({ apiKey: "sk-test" });
  client = new OpenAI({ baseURL: fake.baseUrl, apiKey: "sk-test", maxRetries: 0 });
});
afterEach(async () => {
  await fake.close();
});

async function collect(model: string, extra: Partial<OpenAI.ChatCompletionCreateParamsStreaming> = {}) {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "hello there" }],
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

describe("fake OpenAI server", () => {
  it("echoes the last user message by default, streamed, with a usage chunk", async () => {
    const chunks = await collect("gpt-4o-mini");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("echo: hello there");
    expect(chunks.length).toBeGreaterThan(3);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(last.usage?.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "stop")).toBe(true);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.model).toBe("gpt-4o-mini");
    expect(fake.requests[0]!.headers.authorization).toBe("Bearer sk-test");
  });

  it("answers non-streaming requests with a chat.completion", async () => {
    fake.enqueue({ text: "plain", reasoning: "thought" });
    const r = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
    });
    expect(r.choices[0]?.message.content).toBe("plain");
    expect((r.choices[0]?.message as unknown as { reasoning_content: string }).reasoning_content).toBe(
      "thought",
    );
    expect(r.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("splits tool-call arguments across chunks by index and the SDK reassembles them", async () => {
    fake.enqueue({
      toolCalls: [
        { id: "call_a", name: "get_weather", arguments: { city: "Berlin", unit: "celsius" } },
        { name: "get_time", arguments: '{"tz":"Europe/Berlin"}' },
      ],
      chunkSize: 5,
    });
    const chunks = await collect("gpt-4o");
    const calls = new Map<number, { id?: string; name?: string; args: string }>();
    let fragments = 0;
    for (const c of chunks)
      for (const tc of c.choices[0]?.delta.tool_calls ?? []) {
        const cur = calls.get(tc.index) ?? { args: "" };
        if (tc.id) cur.id = tc.id;
        if (tc.function?.name) cur.name = tc.function.name;
        cur.args += tc.function?.arguments ?? "";
        calls.set(tc.index, cur);
        fragments++;
      }
    expect(fragments).toBeGreaterThan(4);
    expect(calls.get(0)).toEqual({
      id: "call_a",
      name: "get_weather",
      args: '{"city":"Berlin","unit":"celsius"}',
    });
    expect(calls.get(1)?.name).toBe("get_time");
    expect(JSON.parse(calls.get(1)!.args)).toEqual({ tz: "Europe/Berlin" });
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "tool_calls")).toBe(true);
  });

  it("streams reasoning_content deltas before the content", async () => {
    fake.enqueue({ reasoning: "let me think", text: "42" });
    const chunks = await collect("deepseek-reasoner");
    const deltas = chunks.map((c) => c.choices[0]?.delta as { content?: string; reasoning_content?: string });
    expect(deltas.map((d) => d?.reasoning_content ?? "").join("")).toBe("let me think");
    expect(deltas.map((d) => d?.content ?? "").join("")).toBe("42");
  });

  it("rejects a wrong key with OpenAI's 401 error shape", async () => {
    const bad = new OpenAI({ baseURL: fake.baseUrl, apiKey: "sk-wrong", maxRetries: 0 });
    const err = await bad.chat.completions.create({ model: "m", messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(401);
    expect((err as APIError).code).toBe("invalid_api_key");
    expect(fake.requests).toHaveLength(1);
  });

  it("returns 429 with retry-after, context overflow and 500 in OpenAI's shape", async () => {
    fake.enqueue({ error: { status: 429, retryAfter: 7 } }, contextOverflowStep(), {
      error: { status: 500 },
    });
    const e1 = (await collect("m").catch((e: unknown) => e)) as APIError;
    expect(e1.status).toBe(429);
    expect(e1.headers?.get("retry-after")).toBe("7");
    expect(e1.code).toBe("rate_limit_exceeded");
    const e2 = (await collect("m").catch((e: unknown) => e)) as APIError;
    expect(e2.status).toBe(400);
    expect(e2.code).toBe("context_length_exceeded");
    expect(e2.message).toContain("maximum context length");
    const e3 = (await collect("m").catch((e: unknown) => e)) as APIError;
    expect(e3.status).toBe(500);
  });

  it("scopes queued steps to a model", async () => {
    fake.enqueue({ model: "fallback", text: "from fallback" }, { model: "primary", error: { status: 503 } });
    const e = (await collect("primary").catch((x: unknown) => x)) as APIError;
    expect(e.status).toBe(503);
    const chunks = await collect("fallback");
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("from fallback");
    expect(fake.pending()).toBe(0);
  });

  it("uses the handler when the queue is empty", async () => {
    fake.setHandler((req) => ({ text: `handled ${req.body?.messages?.length ?? 0}` }));
    const chunks = await collect("m");
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("handled 1");
  });

  it("hangs until the client aborts", async () => {
    fake.enqueue({ hang: true, text: "partial" });
    const ac = new AbortController();
    const stream = await client.chat.completions.create(
      { model: "m", messages: [{ role: "user", content: "x" }], stream: true },
      { signal: ac.signal },
    );
    let got = "";
    const err = await (async () => {
      for await (const c of stream) {
        got += c.choices[0]?.delta.content ?? "";
        if (got === "partial") ac.abort();
      }
    })().catch((e: unknown) => e);
    // The SDK ends the iteration quietly on abort (callers must check the signal themselves).
    expect(got).toBe("partial");
    expect(err === undefined || err instanceof Error).toBe(true);
    expect(ac.signal.aborted).toBe(true);
  });

  it("sends malformed JSON that the SDK refuses to parse", async () => {
    fake.enqueue({ malformed: true, text: "a" });
    const err = await collect("m").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
  });

  it("ends a truncated stream without finish_reason or [DONE]", async () => {
    fake.enqueue({ truncated: true, text: "half an ans" });
    const chunks = await collect("m");
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("half an ans");
    expect(chunks.every((c) => !c.choices[0]?.finish_reason)).toBe(true);
  });

  it("lists models", async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toContain("gpt-4o-mini");
  });

  it("runs standalone and prints its URL", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/fakes/openai-server.ts", "--port", "0"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let buf = "";
        child.stdout.on("data", (d: Buffer) => {
          buf += d.toString();
          if (buf.includes("\n")) resolve(buf.trim());
        });
        child.once("exit", (code) => reject(new Error(`exited ${code}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const c = new OpenAI({ baseURL: url, apiKey: "x", maxRetries: 0 });
      const r = await c.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "ping" }],
      });
      expect(r.choices[0]?.message.content).toBe("echo: ping");
    } finally {
      child.kill("SIGTERM");
    }
  });
});
