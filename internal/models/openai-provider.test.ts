import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { createOpenAIProvider, requestBody, type Provider, type ProviderRequest } from "./openai-provider.js";
import { ModelError, type ModelStreamEvent } from "./types.js";

let fake: FakeOpenAI;
let provider: Provider;

beforeEach(async () => {
  fake = await startFakeOpenAI({ apiKey: "sk-p" });
  provider = createOpenAIProvider({
    name: "p",
    baseUrl: fake.baseUrl,
    apiKey: "sk-p",
    headers: { "X-Title": "familiar-test" },
    timeoutMs: 10_000,
  });
});
afterEach(async () => {
  await fake.close();
});

async function collect(req: Partial<ProviderRequest> = {}): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const ev of provider.stream({
    model: "gpt-4o",
    messages: [{ role: "user", content: "hi" }],
    ...req,
  }))
    out.push(ev);
  return out;
}

describe("openai provider", () => {
  it("assembles tool-call argument deltas split across many chunks", async () => {
    const args = { path: "/tmp/some/long/path/name.txt", lines: [1, 2, 3], note: "ünïcødé ✓" };
    fake.enqueue({
      text: "Let me look.",
      toolCalls: [{ id: "call_1", name: "read_file", arguments: args }],
      chunkSize: 3,
    });
    const evs = await collect({
      tools: [{ name: "read_file", description: "reads", parameters: { type: "object", properties: {} } }],
    });
    const calls = evs.filter((e) => e.type === "tool_call");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toEqual({
      type: "tool_call",
      call: { id: "call_1", name: "read_file", arguments: JSON.stringify(args) },
    });
    // Text comes first, then the complete call, then usage, then done.
    expect(evs.map((e) => e.type).slice(-3)).toEqual(["tool_call", "usage", "done"]);
    expect(evs.at(-1)).toMatchObject({
      type: "done",
      finishReason: "tool_calls",
      provider: "p",
      model: "gpt-4o",
    });
    const body = fake.requests[0]!.body!;
    expect(body.tools).toEqual([
      {
        type: "function",
        function: { name: "read_file", description: "reads", parameters: { type: "object", properties: {} } },
      },
    ]);
    expect(fake.requests[0]!.headers["x-title"]).toBe("familiar-test");
  });

  it("emits parallel tool calls of one response in index order", async () => {
    fake.enqueue({
      toolCalls: [
        { id: "a", name: "weather", arguments: { city: "Paris" } },
        { id: "b", name: "weather", arguments: { city: "Tokyo" } },
        { id: "c", name: "time", arguments: "" },
      ],
      chunkSize: 4,
    });
    const evs = await collect();
    const calls = evs.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
    expect(calls).toEqual([
      { id: "a", name: "weather", arguments: '{"city":"Paris"}' },
      { id: "b", name: "weather", arguments: '{"city":"Tokyo"}' },
      { id: "c", name: "time", arguments: "{}" },
    ]);
  });

  it("reports normalized usage from the final usage chunk and thinking deltas", async () => {
    fake.enqueue({
      reasoning: "first think",
      text: "answer",
      usage: {
        prompt_tokens: 100,
        completion_tokens: 20,
        total_tokens: 120,
        prompt_tokens_details: { cached_tokens: 64 },
        completion_tokens_details: { reasoning_tokens: 8 },
      },
    });
    const evs = await collect();
    expect(
      evs
        .filter((e) => e.type === "thinking")
        .map((e) => (e.type === "thinking" ? e.delta : ""))
        .join(""),
    ).toBe("first think");
    const usage = evs.find((e) => e.type === "usage");
    expect(usage).toMatchObject({
      type: "usage",
      usage: { input: 100, output: 20, cacheRead: 64, cacheWrite: 0, reasoning: 8, total: 120 },
    });
  });

  it("sends our message shapes including assistant tool calls and tool results", async () => {
    await collect({
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "q" },
        { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "t", arguments: "{}" }] },
        { role: "tool", content: "result", tool_call_id: "c1", name: "t" },
      ],
      maxTokens: 50,
      temperature: 0.2,
    });
    const body = fake.requests[0]!.body!;
    expect(body.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "q" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
      },
      { role: "tool", content: "result", tool_call_id: "c1" },
    ]);
    expect(body.max_tokens).toBe(50);
    expect(body.temperature).toBe(0.2);
  });

  it("sends the same JSON body the SDK's create() would, with the tool specs serialized once per set", async () => {
    const tools = [
      { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: {} } },
    ];
    const req: ProviderRequest = {
      model: "gpt-4o",
      messages: [{ role: "user", content: 'hi \u2028 "quoted"' }],
      tools,
      maxTokens: 10,
    };
    const expected = {
      model: "gpt-4o",
      messages: [{ role: "user", content: 'hi \u2028 "quoted"' }],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: "function", function: tools[0] }],
      max_tokens: 10,
    };
    expect(requestBody(req, false)).toBe(JSON.stringify(expected));
    const official = JSON.parse(requestBody({ ...req, tools: [] }, true)) as Record<string, unknown>;
    expect(official.max_completion_tokens).toBe(10);
    expect("max_tokens" in official || "tools" in official).toBe(false);
    // Cached per array: a changed tool set (a new array, as the registry hands out) is serialized anew.
    expect(requestBody({ ...req, tools: [...tools, { ...tools[0]!, name: "other" }] }, false)).toContain(
      '"name":"other"',
    );
    for await (const _ of provider.stream(req)) void _;
    for await (const _ of provider.stream(req)) void _;
    for (const r of fake.requests) {
      expect(r.body).toEqual(expected);
      expect(r.headers["content-type"]).toBe("application/json");
    }
  });

  it("an abort before the first chunk gives MODEL_ABORTED", async () => {
    fake.enqueue({ hang: true });
    const ac = new AbortController();
    const p = collect({ signal: ac.signal });
    for (let i = 0; i < 500 && fake.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    const err = (await p.catch((e: unknown) => e)) as ModelError;
    expect(err).toBeInstanceOf(ModelError);
    expect(err.code).toBe("MODEL_ABORTED");
  });

  it("a refusal whose body reports usage carries the bill (the provider counted it); one without does not", async () => {
    fake.enqueue(
      {
        error: {
          status: 500,
          usage: { prompt_tokens: 900, completion_tokens: 0, total_tokens: 900, cost: 0.0123 },
        },
      },
      { error: { status: 500 } },
    );
    const counted = (await collect().catch((e: unknown) => e)) as ModelError;
    expect(counted).toBeInstanceOf(ModelError);
    expect(counted.code).toBe("MODEL_SERVER");
    expect(counted.info.billed).toMatchObject({
      usage: { input: 900, output: 0, total: 900 },
      cost: 0.0123,
      callId: expect.stringMatching(/^chatcmpl-fake/) as unknown,
    });
    const free = (await collect().catch((e: unknown) => e)) as ModelError;
    expect(free.code).toBe("MODEL_SERVER");
    expect(free.info.billed).toBeUndefined();
  });

  it("an error event in the stream that carries usage carries the bill", async () => {
    fake.enqueue(
      {
        streamError: { message: "Provider disconnected unexpectedly", code: "server_error" },
        usage: { prompt_tokens: 700, completion_tokens: 0, total_tokens: 700 },
      },
      { streamError: { message: "Provider disconnected unexpectedly", code: "server_error" } },
    );
    const counted = (await collect().catch((e: unknown) => e)) as ModelError;
    expect(counted).toBeInstanceOf(ModelError);
    expect(counted.message).toMatch(/Provider disconnected unexpectedly/);
    expect(counted.info.billed).toMatchObject({ usage: { input: 700, output: 0, total: 700 } });
    const free = (await collect().catch((e: unknown) => e)) as ModelError;
    expect(free.code).toBe("MODEL_SERVER");
    expect(free.info.billed).toBeUndefined();
  });
});
