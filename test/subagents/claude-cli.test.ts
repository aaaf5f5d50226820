/**
 * The `claude-cli` engine as the daemon assembles it (EngineRegistry in the agent host service), with
 * the fake `claude` script (test/fakes/fake-claude.mjs) speaking the stream-json protocol; and as the
 * primary engine of a real daemon answering through the gateway's /v1/chat/completions.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../internal/core/clock.js";
import type { AgentEvent } from "../../internal/core/agent-events.js";
import { chatWithImages } from "../../internal/agent/chat.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startGatewayDaemon, type GatewayHarness } from "../gateway/harness.js";
import {
  createSubagentHarness,
  forModel,
  modelsConfig,
  OWNER_KEY,
  toolResults,
  waitFor,
  type SubagentHarness,
} from "./harness.js";

const FAKE_CLAUDE = resolve("test/fakes/fake-claude.mjs");
/**
 * These tests follow the subprocess by its pid (the fake's pids.log), which a PID namespace would
 * hide: they run it outside the sandbox, with the fake's state folder passed through. The sandboxed
 * launch is test/subagents/cli-engine-sandbox.test.ts.
 */
const UNSANDBOXED = { sandbox: false, pass_env: ["FAKE_CLAUDE_STATE"] };
let fake: FakeOpenAI;
let state: string;
const open: SubagentHarness[] = [];
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), "fake-claude-"));
  // The engine's subprocesses inherit this environment.
  process.env.FAKE_CLAUDE_STATE = state;
});
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
  // The primary model is never called when the agent's engine is claude-cli.
  expect(fake.requests).toHaveLength(0);
  fake.reset();
  rmSync(state, { recursive: true, force: true });
});

function config(main: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    models: modelsConfig(fake.baseUrl),
    agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE, ...UNSANDBOXED, ...main } },
  };
}

async function setup(
  main: Record<string, unknown> = {},
  opts: { clock?: FakeClock; dir?: string } = {},
): Promise<SubagentHarness> {
  const h = await createSubagentHarness(config(main), opts);
  open.push(h);
  return h;
}

const argvLog = (): string[][] =>
  readFileSync(join(state, "argv.log"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as string[]);
const pids = (): number[] => readFileSync(join(state, "pids.log"), "utf8").trim().split("\n").map(Number);
const sessionOf = (text: string): string => /^turn \d+ in (\S+):/.exec(text)?.[1] ?? "";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function say(h: SubagentHarness, text: string, events?: AgentEvent[]) {
  return h.submit(text, events ? (e) => events.push(e) : undefined).result;
}

describe("claude-cli engine in the agent host", () => {
  it("streams partial deltas and records usage through NormalizeUsage into the usage table", async () => {
    const h = await setup();
    const events: AgentEvent[] = [];
    const r = await say(h, "hello", events);
    expect(r.finishReason).toBe("stop");
    expect(r.text).toMatch(/^turn 1 in \S+: hello$/);
    const deltas = events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : []));
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.join("")).toBe(r.text);
    const argv = argvLog()[0] ?? [];
    expect(argv.slice(0, 6)).toEqual([
      "-p",
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json",
      "--verbose",
    ]);
    expect(argv).toContain("--include-partial-messages");
    // Anthropic usage (input excludes cache reads) normalised: input 101 + 50 cache reads.
    const rows = h.core.db
      .prepare(
        "SELECT provider, model, session_key, input, output, cache_read, cache_write, total FROM usage",
      )
      .all();
    expect(rows).toEqual([
      {
        provider: "claude-cli",
        model: "claude-sonnet-4-5",
        session_key: OWNER_KEY,
        input: 151,
        output: 20,
        cache_read: 50,
        cache_write: 10,
        total: 181,
      },
    ]);
    expect(events.some((e) => e.type === "usage" && e.usage.input === 151)).toBe(true);
    // Thinking streams as thinking deltas, separate from the answer text.
    const thinkEvents: AgentEvent[] = [];
    const t = await say(h, "THINK first", thinkEvents);
    const thoughts = thinkEvents.flatMap((e) => (e.type === "thinking_delta" ? [e.delta] : []));
    expect(thoughts.join("")).toBe("Let me think about this.");
    expect(t.text).toMatch(/^turn 2 in \S+: THINK first$/);
    // The CLI's total_cost_usd is a running total per process: each turn records only its own share.
    const costs = h.core.db.prepare("SELECT cost FROM usage ORDER BY id").all() as { cost: number }[];
    expect(costs.map((c) => c.cost)).toEqual([0.002, 0.002]);
    expect(t.treeCost).toBeCloseTo(0.002, 9);
  });

  it("emits tool events, skips malformed lines and turns an error result into an error reply", async () => {
    const h = await setup();
    const events: AgentEvent[] = [];
    const r = await say(h, "MALFORMED TOOL please", events);
    expect(r.finishReason).toBe("stop");
    expect(r.text).toMatch(/^turn 1 in \S+: MALFORMED TOOL please$/);
    expect(events.some((e) => e.type === "tool_start" && e.name === "Bash")).toBe(true);
    expect(events.some((e) => e.type === "tool_end" && e.result === "file.txt")).toBe(true);
    expect(events.some((e) => e.type === "iteration_text" && e.text === "Let me check.")).toBe(true);
    const bad = await say(h, "ERROR now");
    expect(bad.finishReason).toBe("error");
    expect(bad.text).toBe("Claude CLI error: simulated failure");
    // The process survives an error result: the next turn continues the same CLI session.
    const next = await say(h, "and now?");
    expect(next.text).toBe(`turn 3 in ${sessionOf(r.text)}: and now?`);
    expect(pids()).toHaveLength(1);
  });

  it("resumes with --resume after its subprocess is stopped; after a SIGKILL it answers in a seeded fresh session", async () => {
    const h = await setup();
    const first = await say(h, "one");
    const sid = sessionOf(first.text);
    const [pid] = pids();
    // SIGTERM (a reap, systemd stopping it): the CLI flushes its transcript, so it can be resumed.
    process.kill(pid ?? 0, "SIGTERM");
    await waitFor(() => !alive(pid ?? 0), "the subprocess to die");
    const second = await say(h, "two");
    expect(second.finishReason, second.text).toBe("stop");
    expect(second.text).toBe(`turn 2 in ${sid}: two`);
    const argv = argvLog();
    expect(argv).toHaveLength(2);
    expect(argv[1]).toEqual(expect.arrayContaining(["--resume", sid]));
    // Stopped right before the next message (its exit not yet seen): the message is not lost.
    process.kill(pids()[1] ?? 0, "SIGTERM");
    const third = await say(h, "three");
    expect(third.text).toBe(`turn 3 in ${sid}: three`);
    expect(argvLog().at(-1)).toEqual(expect.arrayContaining(["--resume", sid]));
    // SIGKILL (the OOM killer): the last turn was never flushed and the CLI refuses --resume; the turn
    // still answers, in a fresh CLI session given the conversation from Familiar's store. (One more
    // turn first: whether "three" was answered by the stopped process or its successor is a race.)
    expect((await say(h, "four")).text).toBe(`turn 4 in ${sid}: four`);
    const live = pids().filter(alive);
    expect(live).toHaveLength(1);
    process.kill(live[0] ?? 0, "SIGKILL");
    const fifth = await say(h, "five");
    expect(fifth.finishReason, fifth.text).toBe("stop");
    expect(fifth.text).toMatch(/^turn 1 in \S+: Conversation so far:\n\nUser: one\n\n/);
    expect(fifth.text).toContain(`Assistant: turn 4 in ${sid}: four`);
    expect(fifth.text.endsWith("Current message:\nfive")).toBe(true);
    expect(argvLog().at(-2)).toEqual(expect.arrayContaining(["--resume", sid]));
    expect(argvLog().at(-1)).not.toContain("--resume");
  });

  it("a crash gives a clear error reply and the next turn restarts and resumes", async () => {
    const h = await setup();
    const first = await say(h, "before");
    const sid = sessionOf(first.text);
    const crash = await say(h, "CRASH please");
    expect(crash.finishReason).toBe("error");
    expect(crash.error?.code).toBe("CLAUDE_CLI_CRASHED");
    expect(crash.text).toBe(
      "The Claude CLI stopped unexpectedly (exit code 3: fatal: simulated crash). It will be restarted on your next message.",
    );
    const after = await say(h, "after");
    expect(after.finishReason).toBe("stop");
    expect(after.text).toBe(`turn 2 in ${sid}: after`);
    expect(argvLog().at(-1)).toEqual(expect.arrayContaining(["--resume", sid]));
  });

  it("resumes its session after a restart of the host (the CLI session id is persisted)", async () => {
    const h1 = await setup();
    const first = await say(h1, "remember me");
    const sid = sessionOf(first.text);
    await h1.stop(); // daemon stop: the subprocess is closed
    await waitFor(() => !alive(pids()[0] ?? 0), "the first subprocess to exit");
    const h2 = await setup({}, { dir: h1.core.dir });
    const again = await say(h2, "still there?");
    expect(again.text).toBe(`turn 2 in ${sid}: still there?`);
    expect(argvLog().at(-1)).toEqual(expect.arrayContaining(["--resume", sid]));
  });

  it("/new (host.reset) starts a fresh CLI session", async () => {
    const h = await setup();
    const first = await say(h, "old conversation");
    const sid = sessionOf(first.text);
    h.agents.host.reset(OWNER_KEY, "new");
    const fresh = await say(h, "new conversation");
    expect(fresh.text).toMatch(/^turn 1 in \S+: new conversation$/);
    expect(sessionOf(fresh.text)).not.toBe(sid);
    expect(argvLog().at(-1)).not.toContain("--resume");
    // The old subprocess was stopped by the reset.
    expect(pids()).toHaveLength(2);
    await waitFor(() => !alive(pids()[0] ?? 0), "the old subprocess to exit");
  });

  it("passes mcp_config (workspace-relative) and the host's system prompt with the identity files", async () => {
    const h = await setup({ mcp_config: "mcp.json", system_prompt: "Answer like a pirate." });
    const ws = h.core.ctx.config().workspace;
    writeFileSync(join(ws, "mcp.json"), JSON.stringify({ mcpServers: {} }));
    writeFileSync(join(ws, "SOUL.md"), "You are Polly, the owner's parrot.");
    const r = await say(h, "who are you?");
    expect(r.finishReason).toBe("stop");
    const argv = argvLog().at(-1) ?? [];
    expect(argv[argv.indexOf("--mcp-config") + 1]).toBe(join(ws, "mcp.json"));
    const prompt = argv[argv.indexOf("--append-system-prompt") + 1] ?? "";
    expect(prompt).toContain("You are Polly, the owner's parrot.");
    expect(prompt).toContain("Answer like a pirate.");
    // The clock line would go stale in a long-lived subprocess (Claude Code states the date itself).
    expect(prompt).not.toMatch(/Now: /);
    // Familiar's own tools are not the CLI's: no tool hints, no skill list.
    expect(prompt).not.toContain("memory_write");
    expect(prompt).not.toContain("## Skills");
  });

  it("/compact drops the CLI session: the next turn starts a fresh one seeded with our summary", async () => {
    const h = await setup({ compact: { keep_last_n: 2 } });
    const one = await say(h, "my name is Ada");
    const sid = sessionOf(one.text);
    await say(h, "I live in Lyon");
    await say(h, "I like tea");
    fake.enqueue({ text: "Ada lives in Lyon and likes tea." });
    const out = await h.agents.host.compact(OWNER_KEY);
    expect(out.summary).toContain("Ada lives in Lyon");
    const next = await say(h, "who am I?");
    const fresh = sessionOf(next.text);
    expect(fresh).not.toBe(sid);
    expect(next.text).toMatch(
      /^turn 1 in \S+: Conversation so far:\n\n\[Summary of earlier conversation\].*Ada lives in Lyon and likes tea\./s,
    );
    // The kept messages follow the summary; the turns it replaces do not.
    expect(next.text).toContain(`Assistant: turn 3 in ${sid}: I like tea`);
    expect(next.text).not.toContain("User: my name is Ada");
    expect(next.text.endsWith("Current message:\nwho am I?")).toBe(true);
    expect(argvLog().at(-1)).not.toContain("--resume");
    // From then on the new CLI session is resumed as usual.
    expect((await say(h, "again")).text).toBe(`turn 2 in ${fresh}: again`);
    fake.reset(); // the summary was written by Familiar's model, not the CLI
  });

  it("a session model change (/model) restarts the subprocess with --model and resumes the session", async () => {
    const h = await setup();
    const first = await say(h, "first");
    const sid = sessionOf(first.text);
    expect(argvLog()[0]).not.toContain("--model");
    h.agents.host.setSessionModel(OWNER_KEY, "anthropic/opus");
    const second = await say(h, "second");
    expect(second.text).toBe(`turn 2 in ${sid}: second`);
    const argv = argvLog().at(-1) ?? [];
    expect(argv).toEqual(expect.arrayContaining(["--model", "opus", "--resume", sid]));
    await waitFor(() => !alive(pids()[0] ?? 0), "the old subprocess to exit");
    // Same model again: the subprocess is kept.
    await say(h, "third");
    expect(pids()).toHaveLength(2);
  });

  it("sends the images of a message (ChatWithImages) as image blocks", async () => {
    const h = await setup();
    const png = Buffer.from("png bytes").toString("base64");
    const r = await chatWithImages(
      h.agents.host,
      { channel: "test", sessionKey: OWNER_KEY },
      "what is this?",
      [{ mime: "image/png", data: png }],
    );
    expect(r.text).toMatch(/^turn 1 in \S+: what is this\? \[image\/png\]$/);
  });

  it("a missing mcp_config file is a clear error reply naming it", async () => {
    const h = await setup({ mcp_config: "nowhere/mcp.json" });
    const r = await say(h, "hello");
    expect(r.finishReason).toBe("error");
    expect(r.text).toContain(join(h.core.ctx.config().workspace, "nowhere/mcp.json"));
    expect(r.text).toContain("does not exist");
  });

  it("reaps an idle subprocess after idle_ttl (fake clock) and resumes on the next turn", async () => {
    const clock = new FakeClock();
    const h = await setup({ idle_ttl: "10m" }, { clock });
    const first = await say(h, "first");
    const sid = sessionOf(first.text);
    const [pid] = pids();
    await clock.advance(9 * 60_000);
    expect(alive(pid ?? 0)).toBe(true);
    await clock.advance(60_000);
    await waitFor(() => !alive(pid ?? 0), "the idle subprocess to be reaped");
    const next = await say(h, "later");
    expect(next.text).toBe(`turn 2 in ${sid}: later`);
    expect(argvLog().at(-1)).toEqual(expect.arrayContaining(["--resume", sid]));
  });
});

describe("claude-cli as a subagent", () => {
  it("answers a delegated call; the one-use subprocess is stopped when the call ends", async () => {
    const h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: {}, coder: { engine: "claude-cli", command: FAKE_CLAUDE, ...UNSANDBOXED } },
    });
    open.push(h);
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "coder", message: "fix it" } }],
      },
      { model: "main-model", text: "the coder is done" },
    );
    const r = await h.submit("ask the coder").result;
    expect(r.text).toBe("the coder is done");
    const tool = toolResults(forModel(fake.requests, "main-model")[1])[0] ?? "";
    expect(tool).toMatch(/^\[coder\] turn 1 in \S+: fix it$/);
    await waitFor(() => pids().every((p) => !alive(p)), "the subagent's subprocess to exit");
    expect(h.core.db.prepare("SELECT COUNT(*) AS n FROM claude_sessions").get()).toEqual({ n: 0 });
    fake.reset(); // the model calls above were the primary agent's
  });
});

describe("claude-cli as the daemon's primary engine", () => {
  let gw: GatewayHarness | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it("answers /v1/chat/completions: a persistent session resumes, a stateless call gets a one-shot process", async () => {
    gw = await startGatewayDaemon({
      fake,
      config: { agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE, ...UNSANDBOXED } } },
    });
    const post = async (body: object): Promise<Response> =>
      fetch(`${gw?.base}/v1/chat/completions`, {
        method: "POST",
        headers: gw?.headers(),
        body: JSON.stringify({ model: "familiar", ...body }),
      });
    const r1 = await post({ user: "alice", messages: [{ role: "user", content: "hi" }] });
    expect(r1.status).toBe(200);
    const j1 = (await r1.json()) as { choices: { message: { content: string } }[]; usage: object };
    const a1 = j1.choices[0]?.message.content ?? "";
    expect(a1).toMatch(/^turn 1 in \S+: hi$/);
    expect(j1.usage).toMatchObject({ prompt_tokens: 151, completion_tokens: 20 });
    const r2 = await post({ user: "alice", messages: [{ role: "user", content: "again" }] });
    const j2 = (await r2.json()) as { choices: { message: { content: string } }[] };
    expect(j2.choices[0]?.message.content).toBe(`turn 2 in ${sessionOf(a1)}: again`);

    // Stateless and streamed: the history goes into one message for a fresh, unsaved CLI session.
    const r3 = await post({
      stream: true,
      messages: [
        { role: "user", content: "my name is Bo" },
        { role: "assistant", content: "hello Bo" },
        { role: "user", content: "what is my name?" },
      ],
    });
    expect(r3.headers.get("content-type")).toContain("text/event-stream");
    const sse = await r3.text();
    const deltas = sse
      .split("\n\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)) as { choices: { delta: { content?: string } }[] })
      .map((c) => c.choices[0]?.delta.content ?? "");
    expect(deltas.filter(Boolean).length).toBeGreaterThan(2);
    const answer = deltas.join("");
    expect(answer).toMatch(/^turn 1 in \S+: Conversation so far:/);
    expect(answer).toContain("User: my name is Bo\n\nAssistant: hello Bo");
    expect(answer.endsWith("Current message:\nwhat is my name?")).toBe(true);
    expect(sessionOf(answer)).not.toBe(sessionOf(a1));
    expect(argvLog().at(-1)).not.toContain("--resume");
    // The one-shot process is gone once the call is answered; alice's stays for the next turn.
    await waitFor(() => pids().filter(alive).length === 1, "the one-shot process to exit");
  });
});
