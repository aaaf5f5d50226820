/**
 * Issue 34 item 3: `/v1/chat/completions` honours `tools`, `tool_choice`, `response_format` and the
 * tool-call / `tool` messages of the history, or refuses a field with a 400 that names it. Driven by
 * the official `openai` SDK against a real daemon whose model is the fake OpenAI server.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "openai-tools-token-xyz";
let h: GatewayHarness;
let client: OpenAI;

const weather: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
  client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

describe("client tools", () => {
  it("the model calls the client's function: the turn ends with finish_reason tool_calls", async () => {
    h.fake.enqueue({ toolCalls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Oslo" } }] });
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [weather],
      tool_choice: "auto",
    });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    const calls = r.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ id: "call_w1", type: "function", function: { name: "get_weather" } });
    expect(JSON.parse((calls[0] as { function: { arguments: string } }).function.arguments)).toEqual({
      city: "Oslo",
    });
    const sent = h.fake.requests[0]!.body as unknown as {
      tools: { function: { name: string } }[];
      tool_choice: unknown;
    };
    expect(sent.tools.map((t) => t.function.name)).toContain("get_weather");
    expect(sent.tool_choice).toBe("auto");
  });

  it("the client's results in the history reach the model, which answers them", async () => {
    h.fake.enqueue({ text: "It is 3 degrees in Oslo." });
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_w1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_w1", content: '{"celsius":3}' },
      ],
      tools: [weather],
    });
    expect(r.choices[0]!.message.content).toBe("It is 3 degrees in Oslo.");
    expect(r.choices[0]!.finish_reason).toBe("stop");
    const msgs = h.fake.requests[0]!.body!.messages as unknown as Record<string, unknown>[];
    const asst = msgs.find((m) => m.role === "assistant")!;
    expect(asst.tool_calls).toEqual([
      { id: "call_w1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
    ]);
    expect(msgs.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_w1", content: '{"celsius":3}' });
  });

  it("the agent's own tools keep running inside; only the client's call comes out", async () => {
    h.fake.enqueue(
      { toolCalls: [{ id: "call_t", name: "current_time", arguments: {} }] },
      { toolCalls: [{ id: "call_w2", name: "get_weather", arguments: { city: "Rome" } }] },
    );
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [{ role: "user", content: "Time, then weather in Rome" }],
      tools: [weather],
    });
    expect(r.choices[0]!.finish_reason).toBe("tool_calls");
    expect(r.choices[0]!.message.tool_calls!.map((c) => (c as { id: string }).id)).toEqual(["call_w2"]);
    expect(h.fake.requests).toHaveLength(2);
    const second = h.fake.requests[1]!.body!.messages as unknown as Record<string, unknown>[];
    expect(second.some((m) => m.role === "tool" && m.tool_call_id === "call_t")).toBe(true);
    // tool_choice applies to the first call only; the agent's tools are offered beside the client's.
    const names = (
      h.fake.requests[0]!.body as unknown as { tools: { function: { name: string } }[] }
    ).tools.map((t) => t.function.name);
    expect(names).toEqual(expect.arrayContaining(["read_file", "get_weather"]));
  });

  it("streams the client's tool calls as OpenAI chunks", async () => {
    h.fake.enqueue({ toolCalls: [{ id: "call_s", name: "get_weather", arguments: { city: "Lima" } }] });
    const stream = await client.chat.completions.create({
      model: "familiar",
      stream: true,
      messages: [{ role: "user", content: "Weather in Lima?" }],
      tools: [weather],
    });
    let finish: string | null | undefined;
    let args = "";
    let name = "";
    for await (const ch of stream) {
      const d = ch.choices[0];
      if (d?.finish_reason) finish = d.finish_reason;
      for (const tc of d?.delta.tool_calls ?? []) {
        name += tc.function?.name ?? "";
        args += tc.function?.arguments ?? "";
      }
    }
    expect(finish).toBe("tool_calls");
    expect(name).toBe("get_weather");
    expect(JSON.parse(args)).toEqual({ city: "Lima" });
  });
});

describe("response_format", () => {
  it("json_schema reaches the model and the answer parses", async () => {
    h.fake.enqueue({ text: '{"city":"Oslo","celsius":3}' });
    const format = {
      type: "json_schema" as const,
      json_schema: {
        name: "weather",
        strict: true,
        schema: {
          type: "object",
          properties: { city: { type: "string" }, celsius: { type: "number" } },
          required: ["city", "celsius"],
          additionalProperties: false,
        },
      },
    };
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [{ role: "user", content: "Oslo weather as JSON" }],
      response_format: format,
    });
    expect(JSON.parse(r.choices[0]!.message.content!)).toEqual({ city: "Oslo", celsius: 3 });
    expect((h.fake.requests[0]!.body as unknown as { response_format: unknown }).response_format).toEqual(
      format,
    );
  });

  it("json_object reaches the model", async () => {
    h.fake.enqueue({ text: "{}" });
    await client.chat.completions.create({
      model: "familiar",
      messages: [{ role: "user", content: "JSON please" }],
      response_format: { type: "json_object" },
    });
    expect((h.fake.requests[0]!.body as unknown as { response_format: unknown }).response_format).toEqual({
      type: "json_object",
    });
  });
});

describe("refused fields name themselves", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["n > 1", { n: 2 }, "n"],
    ["top_p not the default", { top_p: 0.5 }, "top_p"],
    ["an unknown field", { logit_bias: { "50256": -100 } }, "logit_bias"],
    ["a tool of another type", { tools: [{ type: "code_interpreter" }] }, "tools.0.type"],
    [
      "tool_choice naming a missing function",
      { tools: [weather], tool_choice: { type: "function", function: { name: "nope" } } },
      "tool_choice",
    ],
    ["an unknown response_format", { response_format: { type: "xml" } }, "response_format.type"],
    [
      "a tool result in a session with no pending call",
      {
        user: "bob",
        messages: [
          { role: "user", content: "hi" },
          { role: "tool", tool_call_id: "call_none", content: "1" },
        ],
      },
      "messages.1.tool_call_id",
    ],
  ];
  for (const [what, extra, param] of cases)
    it(`${what}: 400 with param ${param}`, async () => {
      const err = await client.chat.completions
        .create({
          model: "familiar",
          messages: [{ role: "user", content: "hi" }],
          ...extra,
        } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as { param?: string }).param).toBe(param);
      expect(h.fake.requests).toHaveLength(0);
    });

  it("the defaults are accepted (n 1, top_p 1, penalties 0)", async () => {
    h.fake.enqueue({ text: "ok" });
    const r = await client.chat.completions.create({
      model: "familiar",
      messages: [{ role: "user", content: "hi" }],
      n: 1,
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
      temperature: 0.2,
      max_tokens: 50,
    });
    expect(r.choices[0]!.message.content).toBe("ok");
    const body = h.fake.requests[0]!.body as unknown as { temperature: number; max_tokens: number };
    expect(body.temperature).toBe(0.2);
    expect(body.max_tokens).toBe(50);
  });
});
