/**
 * Issue 34 items 3 and 4: the frameworks people use against the daemon, unchanged, as dev
 * dependencies: the Vercel AI SDK (`ai` + `@ai-sdk/openai`, the default `createOpenAI()(model)`, which
 * speaks the Responses API) and LangChain JS (`@langchain/openai` ChatOpenAI on chat completions and
 * with `useResponsesApi`). The model behind the daemon is the fake OpenAI server. Python's SDK is not
 * run: pip cannot reach its registry on this machine.
 */
import { execFile, spawnSync } from "node:child_process";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "frameworks-token-xyz";
let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => h.fake.reset());

const vercel = () => createOpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN })("familiar");
type Sent = { role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string };
const sent = (i: number): Sent[] => (h.fake.requests[i]?.body?.messages ?? []) as unknown as Sent[];

describe("Vercel AI SDK, default provider (Responses API)", () => {
  it("generateText", async () => {
    h.fake.enqueue({ text: "Hello from Familiar." });
    const r = await generateText({ model: vercel(), prompt: "Say hello" });
    expect(r.text).toBe("Hello from Familiar.");
    expect(r.usage.totalTokens).toBeGreaterThan(0);
    expect(h.fake.requests).toHaveLength(1);
  });

  it("streamText", async () => {
    h.fake.enqueue({ text: "streamed words arrive", chunkSize: 4 });
    const r = streamText({ model: vercel(), prompt: "Stream please" });
    let text = "";
    for await (const d of r.textStream) text += d;
    expect(text).toBe("streamed words arrive");
  });

  it("tools: the SDK runs the client's tool and the model answers its result", async () => {
    h.fake.enqueue(
      { toolCalls: [{ id: "call_v1", name: "weather", arguments: { city: "Oslo" } }] },
      { text: "Oslo: 3 degrees." },
    );
    const r = await generateText({
      model: vercel(),
      prompt: "Weather in Oslo?",
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
    expect(r.steps[0]!.toolCalls[0]).toMatchObject({ toolName: "weather", input: { city: "Oslo" } });
    const second = sent(1);
    expect(second.some((m) => m.role === "tool" && String(m.content).includes('"celsius":3'))).toBe(true);
  });

  it("generateObject with a schema", async () => {
    h.fake.enqueue({ text: '{"name":"Ada","age":36}' });
    const r = await generateObject({
      model: vercel(),
      prompt: "A person",
      schema: jsonSchema<{ name: string; age: number }>({
        type: "object",
        properties: { name: { type: "string" }, age: { type: "number" } },
        required: ["name", "age"],
        additionalProperties: false,
      }),
    });
    expect(r.object).toEqual({ name: "Ada", age: 36 });
    const body = h.fake.requests[0]!.body as unknown as { response_format: { type: string } };
    expect(body.response_format.type).toBe("json_schema");
  });
});

describe("LangChain JS ChatOpenAI", () => {
  const chat = (responses: boolean) =>
    new ChatOpenAI({
      model: "familiar",
      apiKey: TOKEN,
      configuration: { baseURL: `${h.base}/v1` },
      maxRetries: 0,
      ...(responses ? { useResponsesApi: true } : {}),
    });
  const weather = {
    name: "get_weather",
    description: "Weather of a city",
    schema: z.object({ city: z.string() }),
  };

  for (const responses of [false, true])
    describe(responses ? "useResponsesApi" : "chat completions", () => {
      it("invoke", async () => {
        h.fake.enqueue({ text: "Hi there." });
        const r = await chat(responses).invoke("Hello");
        expect(r.text).toBe("Hi there.");
      });

      it("bindTools: the model's call comes back as tool_calls", async () => {
        h.fake.enqueue({ toolCalls: [{ id: "call_lc", name: "get_weather", arguments: { city: "Rome" } }] });
        const r = await chat(responses).bindTools([weather]).invoke("Weather in Rome?");
        expect(r.tool_calls?.[0]).toMatchObject({
          name: "get_weather",
          args: { city: "Rome" },
          id: "call_lc",
        });
      });

      it("withStructuredOutput parses the answer", async () => {
        h.fake.enqueue({ text: '{"city":"Rome","celsius":21}' });
        const r = await chat(responses)
          .withStructuredOutput(z.object({ city: z.string(), celsius: z.number() }), { method: "jsonSchema" })
          .invoke("Rome weather as JSON");
        expect(r).toEqual({ city: "Rome", celsius: 21 });
      });

      it("withStructuredOutput by function calling parses the call", async () => {
        h.fake.enqueue({
          toolCalls: [{ id: "call_so", name: "extract", arguments: { city: "Rome", celsius: 21 } }],
        });
        const r = await chat(responses)
          .withStructuredOutput(z.object({ city: z.string(), celsius: z.number() }), {
            name: "extract",
            method: "functionCalling",
          })
          .invoke("Rome weather");
        expect(r).toEqual({ city: "Rome", celsius: 21 });
      });
    });
});

// The Python SDK runs only where it is installed (pip reaches PyPI); on this project's CI machine it
// does not, so the test is skipped and says why.
const python = spawnSync("python3", ["-c", "import openai"], { encoding: "utf8" });
describe.skipIf(python.status !== 0)(
  "Python openai SDK (skipped: python3 cannot import openai here; pip cannot reach its registry)",
  () => {
    it("chat.completions.parse and responses.create", async () => {
      h.fake.enqueue({ text: '{"n":3}' }, { text: "Hi." });
      const script = `
import json, sys
from openai import OpenAI
from pydantic import BaseModel
class N(BaseModel):
    n: int
c = OpenAI(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0)
p = c.chat.completions.parse(model="familiar", messages=[{"role": "user", "content": "3"}], response_format=N)
r = c.responses.create(model="familiar", input="hello")
print(json.dumps({"n": p.choices[0].message.parsed.n, "text": r.output_text}))
`;
      const out = await new Promise<string>((resolve, reject) =>
        execFile("python3", ["-c", script, `${h.base}/v1`, TOKEN], (err, stdout) =>
          err ? reject(err) : resolve(stdout),
        ),
      );
      expect(JSON.parse(out)).toEqual({ n: 3, text: "Hi." });
    });
  },
);
