/**
 * The rest of issue 5's exec and web_fetch cases driven through the real agent host and loop, with the
 * fake OpenAI server scripting the model's tool calls: exec refused by policy, an approval that
 * expires (fake clock), timeout and abort leaving no orphan process, and web_fetch of a local page
 * with the private-address guard off. What the model receives is read from the next request.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { createModelRouter } from "../../internal/models/router.js";
import { createAgentHost, type AgentHostImpl } from "../../internal/agent/host.js";
import { createToolsHarness, FakeClock, waitFor, type ToolsHarness } from "./harness.js";

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

async function setup(config: Record<string, unknown> = {}, clock?: FakeClock): Promise<AgentHostImpl> {
  h = await createToolsHarness(
    {
      models: {
        providers: { f: { base_url: fake.baseUrl, api_key: "sk-test" } },
        primary: "f/m",
        max_retries: 0,
        timeout_s: 30,
      },
      ...config,
    },
    { start: true, ...(clock ? { clock } : {}) },
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
    requestApproval: parts.requestApproval,
  });
}

/** The content of the tool message with this call id in the latest request that has it. */
function toolResult(callId: string): string | undefined {
  for (const req of [...fake.requests].reverse()) {
    const msgs = (req.body?.messages ?? []) as { role: string; tool_call_id?: string; content: string }[];
    const m = msgs.find((x) => x.role === "tool" && x.tool_call_id === callId);
    if (m) return m.content;
  }
  return undefined;
}

const inbound = (text: string) => ({
  channel: "test",
  sessionKey: "agent:main:test:owner",
  text,
  replyTarget: "test:owner",
});

/** True while the process exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

const pidFile = (): number => {
  try {
    return Number(readFileSync(`${h!.workspace}/desk/pid.txt`, "utf8").trim()) || 0;
  } catch {
    return 0;
  }
};

describe("exec and web_fetch through the agent loop", () => {
  it("exec with security deny is refused and the model is told why", async () => {
    const host = await setup({ tools: { exec: { security: "deny" } } });
    fake.enqueue(
      { toolCalls: [{ id: "d", name: "exec", arguments: { command: "echo hi" } }] },
      { text: "I cannot run commands here." },
    );
    const r = await host.submit(inbound("run echo")).result;
    expect(r.text).toBe("I cannot run commands here.");
    expect(toolResult("d")).toBe("refused: exec is disabled (tools.exec.security: deny)");
    expect(h!.channel.sent).toHaveLength(0); // nobody was asked
  });

  it("an approval nobody answers expires on the clock; the command does not run and the turn goes on", async () => {
    const clock = new FakeClock();
    const host = await setup(
      { tools: { exec: { approval_timeout_s: 60, sandbox: { enabled: false } } } },
      clock,
    );
    fake.enqueue(
      { toolCalls: [{ id: "e", name: "exec", arguments: { command: "touch late.txt" } }] },
      { text: "The owner did not answer." },
    );
    const turn = host.submit(inbound("make a file"));
    await h!.channel.waitFor(1);
    expect(h!.channel.sent[0]).toMatchObject({ target: "owner" });
    expect(h!.channel.sent[0]?.text).toContain("/approve ");
    await clock.advance(60_000);
    const r = await turn.result;
    expect(r.text).toBe("The owner did not answer.");
    expect(toolResult("e")).toBe("the approval request expired without an answer; not run");
    expect(() => readFileSync(`${h!.workspace}/late.txt`)).toThrow();
    expect(h!.parts.approvals.list()).toHaveLength(0);
  });

  it("a command past its timeout is killed with its whole process group", async () => {
    const host = await setup({
      tools: { exec: { security: "full", ask: "off", sandbox: { enabled: false } } },
    });
    fake.enqueue(
      {
        toolCalls: [
          {
            id: "t",
            name: "exec",
            arguments: { command: "sleep 60 & echo $! > pid.txt; wait", timeout_s: 1 },
          },
        ],
      },
      { text: "It took too long." },
    );
    const r = await host.submit(inbound("run the slow thing")).result;
    expect(r.text).toBe("It took too long.");
    expect(toolResult("t")).toMatch(/^command timed out after 1s and was killed/);
    const pid = pidFile();
    expect(pid).toBeGreaterThan(0);
    await waitFor(() => !alive(pid), 10_000, "the background sleep to die");
  });

  it("aborting the turn kills the running command's process group", async () => {
    const host = await setup({
      tools: { exec: { security: "full", ask: "off", sandbox: { enabled: false } } },
    });
    fake.enqueue({
      toolCalls: [{ id: "a", name: "exec", arguments: { command: "sleep 60 & echo $! > pid.txt; wait" } }],
    });
    const turn = host.submit(inbound("run it"));
    const pid = await waitFor(pidFile, 15_000, "the command to start");
    expect(alive(pid)).toBe(true);
    turn.abort("the user pressed stop");
    const r = await turn.result;
    expect(r.finishReason).toBe("aborted");
    await waitFor(() => !alive(pid), 10_000, "the background sleep to die");
    expect(fake.requests).toHaveLength(1); // no model call after the abort
  });

  it("web_fetch reads a local page as text when private addresses are allowed", async () => {
    const site = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        "<html><head><script>var x=1</script></head><body><nav>menu</nav><h1>Router status</h1><p>Uptime 41 days, firmware 7.2.</p></body></html>",
      );
    });
    await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/status`;
    try {
      const host = await setup({ tools: { web: { allow_private: true } } });
      fake.enqueue({ toolCalls: [{ id: "w", name: "web_fetch", arguments: { url } }] }, { text: "41 days." });
      expect((await host.submit(inbound("router uptime?")).result).text).toBe("41 days.");
      const got = toolResult("w") ?? "";
      expect(got.startsWith(`[200 ${url}]`)).toBe(true);
      expect(got).toContain("Uptime 41 days, firmware 7.2.");
      expect(got).not.toContain("<p>");
      expect(got).not.toContain("var x=1");
      expect(got).not.toContain("menu");
    } finally {
      await new Promise((r) => site.close(r));
    }
  });
});
