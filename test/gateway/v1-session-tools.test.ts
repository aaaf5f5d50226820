/**
 * Issue 34, client tools with a persistent session: with `user` (or `X-Familiar-Session`) the agent
 * may call the client's functions; the calls are stored in the session; the client's next request
 * answers them with `tool` messages (`function_call_output` on `/v1/responses`), which are matched
 * to the pending calls, stored once and answered; the agent's own tools keep running inside. Driven
 * by the official `openai` SDK and the Vercel AI SDK against a real daemon and the fake model server.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, tool } from "ai";
import { z } from "zod";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { CLOSED_NOTE } from "../../internal/gateway/openai-pending-calls.js";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "v1-session-tools-token";
let h: GatewayHarness;
let client: OpenAI;

type Sent = { role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string };
const sent = (i: number): Sent[] => (h.fake.requests[i]?.body?.messages ?? []) as unknown as Sent[];
const convo = (i: number): string[] =>
  sent(i)
    .filter((m) => m.role !== "system")
    .map((m) =>
      m.role === "tool"
        ? `tool:${m.tool_call_id}:${String(m.content)}`
        : m.tool_calls
          ? `${m.role}:calls:${(m.tool_calls as { id: string }[]).map((c) => c.id).join(",")}`
          : `${m.role}:${String(m.content)}`,
    )
    // The volatile context note rides on the newest message: keep only its first line.
    .map((s) => s.split("\n")[0]!);
type Row = { role: string; content: string; tool_calls: string | null; tool_call_id: string | null };
const rows = (key: string): string[] =>
  (
    h.daemon.db
      .prepare(
        `SELECT m.role, m.content, m.tool_calls, m.tool_call_id FROM messages m
          JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? ORDER BY m.id`,
      )
      .all(key) as Row[]
  ).map((m) =>
    m.role === "tool"
      ? `tool:${m.tool_call_id}:${m.content}`
      : m.tool_calls
        ? `${m.role}:calls:${(JSON.parse(m.tool_calls) as { id: string }[]).map((c) => c.id).join(",")}`
        : `${m.role}:${m.content}`,
  );

const weather: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const ask: OpenAI.Chat.Completions.ChatCompletionMessageParam = { role: "user", content: "Weather in Lima?" };

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
  client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

/** The first half of a round trip: the model calls get_weather in session `user`. */
async function callOut(user: string, id = "call_w1"): Promise<OpenAI.Chat.Completions.ChatCompletionMessage> {
  h.fake.enqueue({ toolCalls: [{ id, name: "get_weather", arguments: { city: "Lima" } }] });
  const r = await client.chat.completions.create({
    model: "familiar",
    user,
    messages: [ask],
    tools: [weather],
  });
  expect(r.choices[0]?.finish_reason).toBe("tool_calls");
  return r.choices[0]!.message;
}

describe("/v1/chat/completions: client tools in a session", () => {
  it("a round trip: the call is stored, the result answers it, the turn resumes", async () => {
    const call = await callOut("lima");
    expect(rows("agent:main:gateway:lima")).toEqual(["user:Weather in Lima?", "assistant:calls:call_w1"]);
    h.fake.enqueue({ text: "Lima: 19 degrees." });
    const r = await client.chat.completions.create({
      model: "familiar",
      user: "lima",
      tools: [weather],
      messages: [ask, call, { role: "tool", tool_call_id: "call_w1", content: '{"celsius":19}' }],
    });
    expect(r.choices[0]?.message.content).toBe("Lima: 19 degrees.");
    expect(convo(1)).toEqual([
      "user:Weather in Lima?",
      "assistant:calls:call_w1",
      'tool:call_w1:{"celsius":19}',
    ]);
    expect(rows("agent:main:gateway:lima")).toEqual([
      "user:Weather in Lima?",
      "assistant:calls:call_w1",
      'tool:call_w1:{"celsius":19}',
      "assistant:Lima: 19 degrees.",
    ]);
  });

  it("the agent's own tools run inside the turn before the client's call", async () => {
    writeFileSync(join(h.dir, "workspace", "city.txt"), "Lima");
    h.fake.enqueue(
      { toolCalls: [{ id: "own_1", name: "read_file", arguments: { path: "city.txt" } }] },
      { toolCalls: [{ id: "call_o1", name: "get_weather", arguments: { city: "Lima" } }] },
    );
    const r1 = await client.chat.completions.create({
      model: "familiar",
      user: "own",
      tools: [weather],
      messages: [{ role: "user", content: "Weather in the city of city.txt?" }],
    });
    expect(r1.choices[0]?.message.tool_calls?.map((c) => c.id)).toEqual(["call_o1"]);
    expect(convo(1).at(-1)).toMatch(/^tool:own_1:.*Lima/);
    h.fake.enqueue({ text: "Sunny." });
    const r2 = await client.chat.completions.create({
      model: "familiar",
      user: "own",
      tools: [weather],
      messages: [
        { role: "user", content: "Weather in the city of city.txt?" },
        r1.choices[0]!.message,
        { role: "tool", tool_call_id: "call_o1", content: "sunny" },
      ],
    });
    expect(r2.choices[0]?.message.content).toBe("Sunny.");
    expect(convo(2).slice(-2)).toEqual(["assistant:calls:call_o1", "tool:call_o1:sunny"]);
  });

  it("a result for a call that is not pending is a 400 naming its tool_call_id; nothing runs or is stored", async () => {
    const call = await callOut("wrong");
    const before = rows("agent:main:gateway:wrong");
    const err = await client.chat.completions
      .create({
        model: "familiar",
        user: "wrong",
        tools: [weather],
        messages: [ask, call, { role: "tool", tool_call_id: "call_forged", content: "x" }],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe("messages.2.tool_call_id");
    expect(String((err as Error).message)).toContain("call_w1");
    expect(h.fake.requests).toHaveLength(1);
    expect(rows("agent:main:gateway:wrong")).toEqual(before);
    // And in a session with nothing pending.
    const none = await client.chat.completions
      .create({
        model: "familiar",
        user: "nothing-pending",
        messages: [{ role: "tool", tool_call_id: "call_x", content: "x" }],
      })
      .catch((e: unknown) => e);
    expect((none as { param?: string }).param).toBe("messages.0.tool_call_id");
  });

  it("a result missing for one of two pending calls is a 400 naming messages", async () => {
    h.fake.enqueue({
      toolCalls: [
        { id: "c_a", name: "get_weather", arguments: { city: "A" } },
        { id: "c_b", name: "get_weather", arguments: { city: "B" } },
      ],
    });
    const r = await client.chat.completions.create({
      model: "familiar",
      user: "two",
      messages: [ask],
      tools: [weather],
    });
    const err = await client.chat.completions
      .create({
        model: "familiar",
        user: "two",
        tools: [weather],
        messages: [ask, r.choices[0]!.message, { role: "tool", tool_call_id: "c_a", content: "1" }],
      })
      .catch((e: unknown) => e);
    expect((err as { param?: string }).param).toBe("messages");
    expect(String((err as Error).message)).toContain("c_b");
  });

  it("a new message while calls are pending closes them with a note, said in a header", async () => {
    await callOut("closed", "call_c1");
    h.fake.enqueue({ text: "Ok, something else." });
    const { data, response } = await client.chat.completions
      .create({ model: "familiar", user: "closed", messages: [{ role: "user", content: "Never mind." }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe("Ok, something else.");
    expect(response.headers.get("x-familiar-closed-tool-calls")).toBe("call_c1");
    expect(convo(1).slice(-3)).toEqual([
      "assistant:calls:call_c1",
      `tool:call_c1:${CLOSED_NOTE}`,
      "user:Never mind.",
    ]);
  });

  it("the SDK's retry of the result after an upstream 500 stores it once", async () => {
    const call = await callOut("retry-tools", "call_r1");
    h.fake.enqueue({ error: { status: 500, message: "hiccup" } }, { text: "Warm." });
    const retrying = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 2 });
    const r = await retrying.chat.completions.create({
      model: "familiar",
      user: "retry-tools",
      tools: [weather],
      messages: [ask, call, { role: "tool", tool_call_id: "call_r1", content: "warm" }],
    });
    expect(r.choices[0]?.message.content).toBe("Warm.");
    const tools = rows("agent:main:gateway:retry-tools").filter((m) => m.startsWith("tool:"));
    expect(tools).toEqual(["tool:call_r1:warm"]);
    expect(convo(2).filter((m) => m.startsWith("tool:"))).toEqual(["tool:call_r1:warm"]);
  });
});

describe("Vercel AI SDK (chat provider) with a session", () => {
  it("a function-calling round trip with user set runs in the session", async () => {
    h.fake.enqueue(
      { toolCalls: [{ id: "call_v", name: "weather", arguments: { city: "Oslo" } }] },
      { text: "Oslo: 3 degrees." },
    );
    const model = createOpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN }).chat("familiar");
    const r = await generateText({
      model,
      prompt: "Weather in Oslo?",
      providerOptions: { openai: { user: "vercel-tools" } },
      tools: {
        weather: tool({
          description: "Weather of a city",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => ({ city, celsius: 3 }),
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(r.text).toBe("Oslo: 3 degrees.");
    expect(rows("agent:main:gateway:vercel-tools")).toEqual([
      "user:Weather in Oslo?",
      "assistant:calls:call_v",
      'tool:call_v:{"city":"Oslo","celsius":3}',
      "assistant:Oslo: 3 degrees.",
    ]);
  });
});

describe("LangChain ChatOpenAI with a session", () => {
  it("bindTools round trip with X-Familiar-Session: the ToolMessage answers the pending call", async () => {
    h.fake.enqueue(
      { toolCalls: [{ id: "call_lc1", name: "get_weather", arguments: { city: "Bern" } }] },
      { text: "Bern: 8 degrees." },
    );
    const model = new ChatOpenAI({
      model: "familiar",
      apiKey: TOKEN,
      maxRetries: 0,
      configuration: { baseURL: `${h.base}/v1`, defaultHeaders: { "x-familiar-session": "langchain" } },
    }).bindTools([
      { name: "get_weather", description: "Weather of a city", schema: z.object({ city: z.string() }) },
    ]);
    const ask = new HumanMessage("Weather in Bern?");
    const ai = await model.invoke([ask]);
    expect(ai.tool_calls?.[0]).toMatchObject({ name: "get_weather", id: "call_lc1" });
    const answer = await model.invoke([
      ask,
      ai,
      new ToolMessage({ tool_call_id: "call_lc1", content: '{"celsius":8}' }),
    ]);
    expect(answer.text).toBe("Bern: 8 degrees.");
    expect(rows("agent:main:gateway:langchain")).toEqual([
      "user:Weather in Bern?",
      "assistant:calls:call_lc1",
      'tool:call_lc1:{"celsius":8}',
      "assistant:Bern: 8 degrees.",
    ]);
  });
});

describe("Vercel AI SDK (default provider: Responses API) with a session", () => {
  it("a round trip with user set stores the conversation once, in the named session", async () => {
    h.fake.enqueue(
      { toolCalls: [{ id: "call_vr", name: "weather", arguments: { city: "Rome" } }] },
      { text: "Rome: 20 degrees." },
    );
    const model = createOpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN })("familiar");
    const r = await generateText({
      model,
      prompt: "Weather in Rome?",
      providerOptions: { openai: { user: "vercel-responses" } },
      tools: {
        weather: tool({
          description: "Weather of a city",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => ({ city, celsius: 20 }),
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(r.text).toBe("Rome: 20 degrees.");
    expect(rows("agent:main:gateway:vercel-responses")).toEqual([
      "user:Weather in Rome?",
      "assistant:calls:call_vr",
      'tool:call_vr:{"city":"Rome","celsius":20}',
      "assistant:Rome: 20 degrees.",
    ]);
    expect(convo(1)).toEqual([
      "user:Weather in Rome?",
      "assistant:calls:call_vr",
      'tool:call_vr:{"city":"Rome","celsius":20}',
    ]);
  });
});

describe("/v1/responses: function tools in a response chain's session", () => {
  const tools: OpenAI.Responses.Tool[] = [
    { type: "function", name: "lookup", parameters: { type: "object" }, strict: false },
  ];
  it("function_call_output answers the session's pending call; a wrong call_id is a 400", async () => {
    h.fake.enqueue({ toolCalls: [{ id: "call_l1", name: "lookup", arguments: { q: "ORD-7" } }] });
    const r1 = await client.responses
      .create({ model: "familiar", input: "Where is ORD-7?", tools })
      .withResponse();
    const key = r1.response.headers.get("x-familiar-session")!;
    const err = await client.responses
      .create({
        model: "familiar",
        previous_response_id: r1.data.id,
        input: [{ type: "function_call_output", call_id: "call_nope", output: "x" }],
        tools,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe("input.0.call_id");
    h.fake.enqueue({ text: "Ships tomorrow." });
    const r2 = await client.responses
      .create({
        model: "familiar",
        previous_response_id: r1.data.id,
        input: [{ type: "function_call_output", call_id: "call_l1", output: '{"eta":"tomorrow"}' }],
        tools,
      })
      .withResponse();
    expect(r2.data.output_text).toBe("Ships tomorrow.");
    expect(r2.response.headers.get("x-familiar-session")).toBe(key);
    expect(rows(key)).toEqual([
      "user:Where is ORD-7?",
      "assistant:calls:call_l1",
      'tool:call_l1:{"eta":"tomorrow"}',
      "assistant:Ships tomorrow.",
    ]);
  });

  it("a new message instead of the output closes the call, said in a header", async () => {
    h.fake.enqueue({ toolCalls: [{ id: "call_l2", name: "lookup", arguments: { q: "ORD-8" } }] });
    const r1 = await client.responses.create({ model: "familiar", input: "Where is ORD-8?", tools });
    h.fake.enqueue({ text: "Fine." });
    const r2 = await client.responses
      .create({ model: "familiar", previous_response_id: r1.id, input: "Forget it.", tools })
      .withResponse();
    expect(r2.response.headers.get("x-familiar-closed-tool-calls")).toBe("call_l2");
    expect(convo(1).slice(-3)).toEqual([
      "assistant:calls:call_l2",
      `tool:call_l2:${CLOSED_NOTE}`,
      "user:Forget it.",
    ]);
  });
});
