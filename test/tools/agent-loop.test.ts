/**
 * The tools driven through the real agent host and loop, with the fake OpenAI server scripting the
 * model's tool calls. Checks what the model gets back (the next request's tool messages).
 */
import { mkdirSync, readFileSync, rmSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { createModelRouter } from "../../internal/models/router.js";
import { createAgentHost, type AgentHostImpl } from "../../internal/agent/host.js";
import { createToolsHarness, waitFor, type ToolsHarness } from "./harness.js";

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "mcp-server.mjs");
let fake: FakeOpenAI;
let h: ToolsHarness | undefined;
const extraDirs: string[] = [];
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
  for (const d of extraDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setup(config: Record<string, unknown> = {}): Promise<AgentHostImpl> {
  h = await createToolsHarness(
    {
      models: {
        providers: { f: { base_url: fake.baseUrl, api_key: "sk-test" } },
        primary: "f/m",
        max_retries: 0,
        timeout_s: 10,
      },
      ...config,
    },
    { start: true },
  );
  const parts = h.parts;
  const router = createModelRouter({
    config: () => h!.core.ctx.config(),
    logger: h.core.ctx.logger,
    clock: h.core.ctx.clock,
  });
  return createAgentHost({
    ctx: h.core.ctx,
    model: router,
    toolsFor: (agent) => parts.registry.forAgent(agent.id, agent.tools),
    skillsSection: () => parts.skills.promptSection(),
    requestApproval: parts.requestApproval,
  });
}

/** Tool messages the model received in request `i`. */
function toolMessages(i: number): { tool_call_id: string; content: string }[] {
  const msgs = (fake.requests[i]?.body?.messages ?? []) as {
    role: string;
    tool_call_id: string;
    content: string;
  }[];
  return msgs.filter((m) => m.role === "tool");
}

const inbound = (text: string) => ({
  channel: "test",
  sessionKey: "agent:main:test:owner",
  text,
  replyTarget: "test:owner",
});

describe("tools through the agent loop", () => {
  it("file tools work in the workspace and refuse traversal and symlink escapes", async () => {
    const host = await setup();
    const secret = mkdtempSync(join(tmpdir(), "familiar-secret-"));
    extraDirs.push(secret);
    writeFileSync(join(secret, "key.txt"), "s3cret");
    symlinkSync(secret, join(h!.workspace, "link"));
    fake.enqueue(
      {
        toolCalls: [
          { id: "w", name: "write_file", arguments: { path: "desk/todo.md", content: "- buy milk\n" } },
          { id: "t", name: "read_file", arguments: { path: "../../etc/passwd" } },
          { id: "s", name: "read_file", arguments: { path: "link/key.txt" } },
        ],
      },
      { toolCalls: [{ id: "r", name: "read_file", arguments: { path: "desk/todo.md" } }] },
      { text: "Done." },
    );
    const r = await host.submit(inbound("make a todo")).result;
    expect(r.text).toBe("Done.");
    const first = Object.fromEntries(toolMessages(1).map((m) => [m.tool_call_id, m.content]));
    expect(first.w).toBe("wrote 11 bytes to desk/todo.md");
    expect(first.t).toContain('uses ".."');
    expect(first.s).toContain("outside the workspace");
    expect(toolMessages(2).find((m) => m.tool_call_id === "r")?.content).toBe("- buy milk\n");
    expect(JSON.stringify(fake.requests)).not.toContain("s3cret");
  });

  it("exec (unsandboxed): allow-listed runs, asks the owner and runs when approved, errors when denied", async () => {
    const host = await setup({ tools: { exec: { sandbox: { enabled: false } } } });
    fake.enqueue(
      { toolCalls: [{ id: "a", name: "exec", arguments: { command: "echo hello" } }] },
      { text: "ok1" },
    );
    await host.submit(inbound("say hello")).result;
    expect(toolMessages(1)[0]?.content).toBe("exit code 0\nhello\n");

    fake.enqueue(
      { toolCalls: [{ id: "b", name: "exec", arguments: { command: "touch approved.txt" } }] },
      { text: "ok2" },
    );
    const turn = host.submit(inbound("make a file"));
    await h!.channel.waitFor(1);
    expect(h!.channel.sent[0]).toMatchObject({ target: "owner" });
    h!.parts.approvals.resolve(h!.channel.sent[0]?.opts?.approvalId ?? "", "approved");
    expect((await turn.result).text).toBe("ok2");
    expect(toolMessages(3).find((m) => m.tool_call_id === "b")?.content).toBe("exit code 0\n(no output)");
    expect(readFileSync(join(h!.workspace, "desk", "approved.txt"), "utf8")).toBe("");

    fake.enqueue(
      { toolCalls: [{ id: "c", name: "exec", arguments: { command: "touch denied.txt" } }] },
      { text: "ok3" },
    );
    const turn2 = host.submit(inbound("make another"));
    await h!.channel.waitFor(2);
    h!.parts.approvals.resolve(h!.channel.sent[1]?.opts?.approvalId ?? "", "denied");
    await turn2.result;
    expect(toolMessages(5).find((m) => m.tool_call_id === "c")?.content).toBe(
      "the owner denied this command",
    );
  });

  it("web_fetch refuses the local server with the guard on", async () => {
    const host = await setup();
    fake.enqueue(
      { toolCalls: [{ id: "f", name: "web_fetch", arguments: { url: `${fake.baseUrl}/models` } }] },
      { text: "no" },
    );
    await host.submit(inbound("fetch it")).result;
    expect(toolMessages(1)[0]?.content).toContain(
      "refused: 127.0.0.1 is a private/loopback/link-local address",
    );
  });

  it("memory_write then memory_search finds the note with a snippet, and past messages", async () => {
    const host = await setup();
    fake.enqueue(
      {
        toolCalls: [
          { id: "m", name: "memory_write", arguments: { text: "Parking spot is B17 on level two" } },
        ],
      },
      { text: "Saved." },
    );
    await host.submit(inbound("remember my parking spot")).result;
    fake.enqueue(
      { toolCalls: [{ id: "q", name: "memory_search", arguments: { query: "parking spot" } }] },
      { text: "B17." },
    );
    await host.submit(inbound("where did I park?")).result;
    const found = toolMessages(3).find((m) => m.tool_call_id === "q")?.content ?? "";
    expect(found).toMatch(/memory\/\d{4}-\d{2}-\d{2}\.md:3/);
    expect(found).toContain("**Parking** **spot** is B17");
    // The transcript (the user's earlier message) is searchable too.
    expect(found).toContain("session agent:main:test:owner");
  });

  it("skills are listed in the prompt and loaded with the skill tool; MCP tools are callable", async () => {
    const host = await setup({ mcp: { servers: { fx: { command: process.execPath, args: [FIXTURE] } } } });
    mkdirSync(join(h!.workspace, "skills", "web-summary"), { recursive: true });
    writeFileSync(
      join(h!.workspace, "skills", "web-summary", "SKILL.md"),
      "---\nname: web-summary\ndescription: The owner's own summary style\n---\nThree bullets, no more.\n",
    );
    h!.parts.skills.reload();
    await waitFor(() => h?.parts.mcp.health().fx?.state === "connected", 20_000, "the MCP server");
    fake.enqueue(
      {
        toolCalls: [
          { id: "k", name: "skill", arguments: { name: "web-summary" } },
          { id: "x", name: "mcp__fx__add", arguments: { a: 20, b: 22 } },
        ],
      },
      { text: "ok" },
    );
    await host.submit(inbound("summarise")).result;
    const system =
      ((fake.requests[0]?.body?.messages ?? []) as { role: string; content: string }[])[0]?.content ?? "";
    expect(system).toContain("- web-summary: The owner's own summary style");
    expect(system).toContain("- reminders:");
    const tools = ((fake.requests[0]?.body?.tools ?? []) as { function: { name: string } }[]).map(
      (t) => t.function.name,
    );
    expect(tools).toEqual(
      expect.arrayContaining(["read_file", "exec", "memory_search", "skill", "mcp__fx__add"]),
    );
    const res = Object.fromEntries(toolMessages(1).map((m) => [m.tool_call_id, m.content]));
    expect(res.k).toContain("Three bullets, no more.");
    expect(res.x).toBe("42");
  });
});
