/**
 * Deferred tools (issue 38, lean prompts) through the real agent host and loop, with the fake OpenAI
 * server playing the model: a deferred tool's schema is not sent until `load_tools` asks for it, it
 * then goes with the rest of the turn's calls, a direct call still runs, and `tools.deferred: []`
 * sends every schema as before.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import type { AgentHostImpl } from "../../internal/agent/host.js";
import { createLoopHost, type ToolsHarness } from "./harness.js";

let fake: FakeOpenAI;
let h: ToolsHarness | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  fake.reset();
  await h?.close();
  h = undefined;
});

async function setup(config: Record<string, unknown> = {}): Promise<AgentHostImpl> {
  const made = await createLoopHost(fake.baseUrl, config);
  h = made.h;
  return made.host;
}

const inbound = (text: string) => ({
  channel: "test",
  sessionKey: "agent:main:test:owner",
  text,
  replyTarget: "test:owner",
});

interface SentTool {
  function: { name: string; description: string; parameters: { properties?: Record<string, unknown> } };
}
const toolsOf = (i: number): SentTool[] => (fake.requests[i]?.body?.tools ?? []) as SentTool[];
const namesOf = (i: number): string[] => toolsOf(i).map((t) => t.function.name);
function toolResults(i: number): string[] {
  const msgs = (fake.requests[i]?.body?.messages ?? []) as { role: string; content: string }[];
  return msgs.filter((m) => m.role === "tool").map((m) => m.content);
}

describe("deferred tools", () => {
  it("lists deferred tools in load_tools only, and sends a loaded tool's schema for the rest of the turn", async () => {
    const host = await setup();
    fake.enqueue(
      { toolCalls: [{ id: "l", name: "load_tools", arguments: { names: ["current_time"] } }] },
      { toolCalls: [{ id: "t", name: "current_time", arguments: { timezone: "Asia/Tokyo" } }] },
      { text: "It is late in Tokyo." },
    );
    const r = await host.submit(inbound("what time is it in Tokyo?")).result;
    expect(r.text).toBe("It is late in Tokyo.");

    // First call: no current_time schema; the loader names it with a hint, and only allowed tools.
    expect(namesOf(0)).not.toContain("current_time");
    const loader = toolsOf(0).find((t) => t.function.name === "load_tools");
    expect(loader?.function.description).toContain("current_time (time in another zone)");
    expect(loader?.function.description).toContain("send_message (message another chat)");
    // Second call: loaded, with its full schema; the loader no longer offers it.
    expect(namesOf(1)).toContain("current_time");
    const later = toolsOf(1).find((t) => t.function.name === "load_tools");
    expect(later?.function.description).not.toContain("current_time");
    expect(toolResults(1)[0]).toContain("loaded current_time");
    expect(toolResults(2)[1]).toContain("Asia/Tokyo");

    // The next turn starts lean again.
    fake.enqueue({ text: "hi" });
    await host.submit(inbound("hi")).result;
    expect(namesOf(3)).not.toContain("current_time");
  });

  it("runs a deferred tool called directly, and refuses to load a tool that is not deferred or not allowed", async () => {
    const host = await setup({ agents: { main: { tools: { deny: ["send_message"] } } } });
    fake.enqueue(
      {
        toolCalls: [
          { id: "t", name: "current_time", arguments: { timezone: "UTC" } },
          { id: "x", name: "load_tools", arguments: { names: ["send_message"] } },
          { id: "y", name: "load_tools", arguments: { names: ["read_file"] } },
          { id: "z", name: "load_tools", arguments: {} },
        ],
      },
      { text: "done" },
    );
    await host.submit(inbound("time?")).result;
    const loader = toolsOf(0).find((t) => t.function.name === "load_tools");
    expect(loader?.function.description).not.toContain("send_message");
    const [time, send, readFile, empty] = toolResults(1);
    expect(time).toContain("UTC");
    expect(send).toContain("cannot load send_message");
    expect(readFile).toContain("cannot load read_file");
    expect(empty).toContain("invalid arguments: names");
  });

  it("sends every schema and no loader when tools.deferred is empty", async () => {
    const host = await setup({ tools: { deferred: [] } });
    fake.enqueue({ text: "hi" });
    await host.submit(inbound("hi")).result;
    expect(namesOf(0)).toContain("current_time");
    expect(namesOf(0)).toContain("send_message");
    expect(namesOf(0)).not.toContain("load_tools");
  });
});
