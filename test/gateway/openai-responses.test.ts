/**
 * Issue 34 item 4: `/v1/responses` driven by the official `openai` SDK's `client.responses.create`
 * (streamed and not) against a real daemon whose model is the fake OpenAI server: text and image
 * input, streaming events, usage, `previous_response_id`, function tools, `text.format`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "responses-token-xyz";
let h: GatewayHarness;
let client: OpenAI;
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

type Sent = { role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string };
const sent = (i: number): Sent[] => (h.fake.requests[i]?.body?.messages ?? []) as unknown as Sent[];

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
  client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

describe("client.responses.create", () => {
  it("non-streaming: output_text, output items and usage", async () => {
    h.fake.enqueue({ text: "Paris.", usage: { prompt_tokens: 40, completion_tokens: 2, total_tokens: 42 } });
    const r = await client.responses.create({
      model: "familiar",
      instructions: "Answer in one word.",
      input: "Capital of France?",
    });
    expect(r.object).toBe("response");
    expect(r.status).toBe("completed");
    expect(r.output_text).toBe("Paris.");
    expect(r.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed" });
    expect(r.usage).toMatchObject({ input_tokens: 40, output_tokens: 2, total_tokens: 42 });
    expect(JSON.stringify(sent(0))).toContain("Answer in one word.");
  });

  it("streaming: created, deltas that add up, completed with usage", async () => {
    h.fake.enqueue({ text: "one two three four", chunkSize: 3 });
    const stream = await client.responses.create({ model: "familiar", input: "count", stream: true });
    const types: string[] = [];
    let text = "";
    let done: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") done = ev.response;
    }
    expect(text).toBe("one two three four");
    expect(types[0]).toBe("response.created");
    expect(types).toContain("response.output_item.added");
    expect(types).toContain("response.output_text.done");
    expect(types.at(-1)).toBe("response.completed");
    expect(done?.usage?.total_tokens).toBeGreaterThan(0);
    expect(done?.output[0]).toMatchObject({ type: "message", content: [{ type: "output_text", text }] });
  });

  it("previous_response_id continues the conversation", async () => {
    h.fake.enqueue({ text: "Noted: 7." }, { text: "You said 7." });
    const first = await client.responses.create({ model: "familiar", input: "Remember 7." });
    const second = await client.responses.create({
      model: "familiar",
      input: "What number?",
      previous_response_id: first.id,
    });
    expect(second.output_text).toBe("You said 7.");
    expect(second.previous_response_id).toBe(first.id);
    const msgs = sent(1).map((m) => m.content);
    expect(msgs).toContain("Remember 7.");
    expect(msgs).toContain("Noted: 7.");
    const err = await client.responses
      .create({ model: "familiar", input: "x", previous_response_id: "resp_missing" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const again = await client.responses.retrieve(first.id);
    expect(again.output_text ?? "").toBe("Noted: 7.");
  });

  it("image input reaches the model as an image part", async () => {
    h.fake.enqueue({ text: "A single pixel." });
    await client.responses.create({
      model: "familiar",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is this?" },
            { type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" },
          ],
        },
      ],
    });
    const user = sent(0).findLast((m) => m.role === "user")!;
    expect(JSON.stringify(user.content)).toContain("data:image/png;base64,");
  });

  it("function tools: a call comes out; its output goes back and is answered", async () => {
    h.fake.enqueue({ toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "ORD-7" } }] });
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: "function",
        name: "lookup",
        description: "Looks up an order",
        parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
        strict: false,
      },
    ];
    const r1 = await client.responses.create({ model: "familiar", input: "Where is ORD-7?", tools });
    const call = r1.output.find((o) => o.type === "function_call");
    expect(call).toMatchObject({ type: "function_call", name: "lookup", call_id: "call_1" });
    h.fake.enqueue({ text: "ORD-7 ships tomorrow." });
    const r2 = await client.responses.create({
      model: "familiar",
      previous_response_id: r1.id,
      input: [{ type: "function_call_output", call_id: "call_1", output: '{"eta":"tomorrow"}' }],
      tools,
    });
    expect(r2.output_text).toBe("ORD-7 ships tomorrow.");
    const msgs = sent(1);
    expect(msgs.some((m) => m.role === "assistant" && JSON.stringify(m.tool_calls).includes("call_1"))).toBe(
      true,
    );
    expect(msgs.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1" });
  });

  it("streams a function call as output_item and arguments events", async () => {
    h.fake.enqueue({ toolCalls: [{ id: "call_s", name: "lookup", arguments: { q: "A" } }] });
    const stream = await client.responses.create({
      model: "familiar",
      input: "look A up",
      stream: true,
      tools: [{ type: "function", name: "lookup", parameters: { type: "object" }, strict: false }],
    });
    let args = "";
    let done: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      if (ev.type === "response.function_call_arguments.done") args = ev.arguments;
      if (ev.type === "response.completed") done = ev.response;
    }
    expect(JSON.parse(args)).toEqual({ q: "A" });
    expect(done?.output.some((o) => o.type === "function_call")).toBe(true);
  });

  it("text.format json_schema reaches the model as response_format", async () => {
    h.fake.enqueue({ text: '{"n":3}' });
    const r = await client.responses.create({
      model: "familiar",
      input: "three as JSON",
      text: {
        format: {
          type: "json_schema",
          name: "num",
          strict: true,
          schema: {
            type: "object",
            properties: { n: { type: "number" } },
            required: ["n"],
            additionalProperties: false,
          },
        },
      },
    });
    expect(JSON.parse(r.output_text)).toEqual({ n: 3 });
    const body = h.fake.requests[0]!.body as unknown as {
      response_format: { type: string; json_schema: { name: string } };
    };
    expect(body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "num" } });
  });

  it("an unsupported field is a 400 that names it", async () => {
    const err = await client.responses
      .create({
        model: "familiar",
        input: "x",
        tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }],
      } as OpenAI.Responses.ResponseCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe("tools.0.type");
  });
});
