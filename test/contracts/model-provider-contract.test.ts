/**
 * Runs the model provider contract against the OpenAI-compatible provider (talking to the in-process
 * fake OpenAI server over a real socket) and the built-in echo model.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createEchoProvider } from "../../internal/models/echo-model.js";
import { createOpenAIProvider } from "../../internal/models/openai-provider.js";
import { startFakeOpenAI } from "../fakes/openai-server.js";
import { runModelProviderContract } from "./model-provider-contract.js";

/** A port on 127.0.0.1 where nothing listens any more. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

runModelProviderContract("openai-compatible (fake server)", { tools: true, remote: true }, async () => {
  const fake = await startFakeOpenAI({ apiKey: "sk-contract" });
  const make = (baseUrl: string): ReturnType<typeof createOpenAIProvider> =>
    createOpenAIProvider({ name: "fake", baseUrl, apiKey: "sk-contract", timeoutMs: 10_000 });
  return {
    provider: make(fake.baseUrl),
    model: "gpt-4o",
    answerWithToolCall: (call) =>
      fake.enqueue({
        toolCalls: [{ id: call.id, name: call.name, arguments: call.arguments }],
        chunkSize: 5,
      }),
    lastReceived: () =>
      (fake.requests.at(-1)?.body?.messages ?? []).map((m) => ({
        role: m.role,
        ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
      })),
    holdOpen: () => fake.enqueue({ hang: true, text: "partial answer" }),
    refuseNext: (status, retryAfter) =>
      fake.enqueue({
        error: { status, message: `scripted ${status}`, ...(retryAfter !== undefined ? { retryAfter } : {}) },
      }),
    truncateNext: () => fake.enqueue({ truncated: true, text: "cut off mid" }),
    unreachable: async () => make(`http://127.0.0.1:${await closedPort()}/v1`),
    cleanup: () => fake.close(),
  };
});

runModelProviderContract("echo", { tools: false, remote: false }, async () => ({
  provider: createEchoProvider(),
  model: "echo",
  cleanup: async () => undefined,
}));
