import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { createAgentHost } from "../host.js";
import { ClaudeCliEngine } from "./claude-cli-engine.js";
import { FakeClock } from "../../core/clock.js";
import type { AgentEvent } from "../../core/agent-events.js";
import type { ChatMessage, ModelClient, Usage } from "../../models/types.js";
import { Writable } from "node:stream";
import { createLogger } from "../../log/logger.js";
import { seedText } from "./claude-seed.js";

const FAKE = resolve("test/fakes/fake-claude.mjs");
// The primary model is never called when the agent's engine is claude-cli.
const unusedModel: ModelClient = {
  // eslint-disable-next-line require-yield
  async *stream() {
    throw new Error("the model client must not be called for a claude-cli agent");
  },
};
const normalize = (raw: unknown): Usage => {
  const u = raw as {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  };
  return {
    input: u.input_tokens,
    output: u.output_tokens,
    cacheRead: u.cache_read_input_tokens,
    cacheWrite: u.cache_creation_input_tokens,
    reasoning: 0,
    total: u.input_tokens + u.output_tokens,
  };
};

describe("claude-cli engine", () => {
  let core: TestCore;
  let engine: ClaudeCliEngine;
  let state: string;
  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), "fake-claude-"));
    process.env.FAKE_CLAUDE_STATE = state;
    core = createTestCore({ agents: { main: { engine: "claude-cli" } } });
    engine = newEngine(true);
  });
  afterEach(() => {
    engine.close();
    core.close();
  });
  function newEngine(partial: boolean): ClaudeCliEngine {
    return new ClaudeCliEngine({
      command: FAKE,
      extraArgs: [],
      idleTtlMs: 60_000,
      partialMessages: partial,
      cwd: core.dir,
      db: core.db,
      logger: core.ctx.logger,
      normalizeUsage: normalize,
    });
  }
  function host(e = engine) {
    return createAgentHost({
      ctx: core.ctx,
      model: unusedModel,
      engines: { "claude-cli": e.engine() },
      onReset: (k) => e.reset(k),
    });
  }

  it("streams partial deltas, records usage and returns the result text", async () => {
    const h = host();
    const events: AgentEvent[] = [];
    const r = await h.submit({ channel: "test", sessionKey: "agent:main:test:dm:1", text: "hello" }, (e) =>
      events.push(e),
    ).result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toMatch(/^turn 1 in .*: hello$/);
    const deltas = events.filter((e) => e.type === "text_delta");
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.map((e) => (e.type === "text_delta" ? e.delta : "")).join("")).toBe(r.text);
    const usage = core.db.prepare("SELECT provider, input, output, cache_read FROM usage").all();
    expect(usage).toEqual([{ provider: "claude-cli", input: 101, output: 20, cache_read: 50 }]);
  });

  it("emits tool events and reports error results and malformed lines without crashing", async () => {
    const h = host();
    const events: AgentEvent[] = [];
    const r1 = await h.submit({ channel: "test", sessionKey: "k1", text: "MALFORMED TOOL please" }, (e) =>
      events.push(e),
    ).result;
    expect(r1.finishReason).toBe("stop");
    expect(events.some((e) => e.type === "tool_start" && e.name === "Bash")).toBe(true);
    expect(events.some((e) => e.type === "tool_end" && e.result === "file.txt")).toBe(true);
    const r2 = await h.submit({ channel: "test", sessionKey: "k1", text: "ERROR now" }).result;
    expect(r2.finishReason).toBe("error");
    expect(r2.text).toContain("simulated failure");
  });

  it("keeps one subprocess while the prompt holds; an edited prompt file restarts it on the same CLI session", async () => {
    const clock = new FakeClock(Date.now());
    core.close();
    core = createTestCore({ agents: { main: { engine: "claude-cli" } } }, { clock });
    engine.close();
    engine = newEngine(true);
    const soul = join(core.ctx.config().workspace, "SOUL.md");
    writeFileSync(soul, "# Soul\nYou are terse.\n");
    const h = host();
    const key = "agent:main:test:dm:3";
    const argv = (): string[][] =>
      readFileSync(join(state, "argv.log"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as string[]);
    const promptOf = (a: string[] | undefined): string =>
      a?.[(a?.indexOf("--append-system-prompt") ?? -2) + 1] ?? "";
    const a = await h.submit({ channel: "test", sessionKey: key, text: "one" }).result;
    const sid = /in (\S+):/.exec(a.text)?.[1];
    await h.submit({ channel: "test", sessionKey: key, text: "two" }).result;
    expect(argv()).toHaveLength(1); // the time in the prompt changes; the process stays
    expect(promptOf(argv()[0])).toContain("You are terse.");
    writeFileSync(soul, "# Soul\nYou are chatty and warm.\n");
    await clock.advance(1001); // workspace files are re-checked at most once a second
    const c = await h.submit({ channel: "test", sessionKey: key, text: "three" }).result;
    expect(c.text).toBe(`turn 3 in ${sid}: three`);
    expect(argv()).toHaveLength(2);
    expect(argv()[1]).toContain("--resume");
    expect(promptOf(argv()[1])).toContain("You are chatty and warm.");
    expect(promptOf(argv()[1])).not.toContain("You are terse.");
  });

  it("resumes its session after the subprocess is killed or crashes, and /new starts fresh", async () => {
    const h = host();
    const key = "agent:main:test:dm:2";
    const a = await h.submit({ channel: "test", sessionKey: key, text: "one" }).result;
    const sid = /in (\S+):/.exec(a.text)?.[1];
    expect(sid).toBeTruthy();
    engine.close(); // simulate an idle reap / kill
    const b = await h.submit({ channel: "test", sessionKey: key, text: "two" }).result;
    expect(b.text).toBe(`turn 2 in ${sid}: two`);
    const crash = await h.submit({ channel: "test", sessionKey: key, text: "CRASH" }).result;
    expect(crash.finishReason).toBe("error");
    expect(crash.text).toMatch(/stopped unexpectedly.*restarted/);
    // A daemon restart: a new engine over the same db resumes too.
    engine.close();
    engine = newEngine(false);
    const c = await host(engine).submit({ channel: "test", sessionKey: key, text: "three" }).result;
    expect(c.text).toBe(`turn 3 in ${sid}: three`);
    const argv = readFileSync(join(state, "argv.log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as string[]);
    expect(argv.at(-1)).toContain("--resume");
    host(engine).reset(key);
    const d = await host(engine).submit({ channel: "test", sessionKey: key, text: "fresh" }).result;
    expect(d.text).toMatch(/^turn 1 in /);
    expect(d.text).not.toContain(sid as string);
  });
});

describe("claude-cli engine: a CLI session that cannot be resumed", () => {
  let core: TestCore;
  let state: string;
  const engines: ClaudeCliEngine[] = [];
  const lines: string[] = [];
  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), "fake-claude-"));
    process.env.FAKE_CLAUDE_STATE = state;
    core = createTestCore({ agents: { main: { engine: "claude-cli" } } });
    lines.length = 0;
  });
  afterEach(() => {
    for (const e of engines.splice(0)) e.close();
    core.close();
  });
  function newEngine(): ClaudeCliEngine {
    const logger = createLogger({
      destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }),
      pretty: false,
    });
    const e = new ClaudeCliEngine({
      command: FAKE,
      extraArgs: [],
      idleTtlMs: 60_000,
      partialMessages: false,
      cwd: core.dir,
      db: core.db,
      logger,
      normalizeUsage: normalize,
    });
    engines.push(e);
    return e;
  }
  const host = (e: ClaudeCliEngine) =>
    createAgentHost({
      ctx: core.ctx,
      model: unusedModel,
      engines: { "claude-cli": e.engine() },
      onReset: (k) => e.reset(k),
    });
  const inputs = (): { sessionId: string; text: string }[] =>
    readFileSync(join(state, "input.log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { sessionId: string; text: string });
  const argv = (): string[][] =>
    readFileSync(join(state, "argv.log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as string[]);

  it("after a SIGKILL, falls back once to a fresh CLI session seeded from the store; one log line says so", async () => {
    const engine = newEngine();
    const h = host(engine);
    const key = "agent:main:test:dm:kill";
    const a = await h.submit({ channel: "test", sessionKey: key, text: "my name is Ada" }).result;
    const sid = /in (\S+):/.exec(a.text)?.[1] as string;
    await h.submit({ channel: "test", sessionKey: key, text: "I live in Lyon" }).result;
    // The OOM killer: the subprocess dies without flushing its last turn.
    const pid = Number(readFileSync(join(state, "pids.log"), "utf8").trim().split("\n").at(-1));
    process.kill(pid, "SIGKILL");
    // A daemon restart too: nothing of the old process survives but the stored CLI session id.
    engine.close();
    const h2 = host(newEngine());
    const c = await h2.submit({ channel: "test", sessionKey: key, text: "where do I live?" }).result;
    expect(c.finishReason).toBe("stop");
    const newSid = /in (\S+):/.exec(c.text)?.[1] as string;
    expect(newSid).not.toBe(sid);
    expect(c.text).toMatch(/^turn 1 in /);
    // The fresh session got the conversation from our store, then the current message.
    const seeded = inputs().at(-1)!;
    expect(seeded.sessionId).toBe(newSid);
    expect(seeded.text).toBe(
      [
        "Conversation so far:",
        "User: my name is Ada",
        `Assistant: turn 1 in ${sid}: my name is Ada`,
        "User: I live in Lyon",
        `Assistant: turn 2 in ${sid}: I live in Lyon`,
        "Current message:\nwhere do I live?",
      ].join("\n\n"),
    );
    const spawns = argv();
    expect(spawns.at(-2)).toEqual(expect.arrayContaining(["--resume", sid]));
    expect(spawns.at(-1)).not.toContain("--resume");
    const warned = lines.filter((l) => l.includes("resuming CLI session"));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(
      `resuming CLI session ${sid} failed (No conversation found with session ID: ${sid})`,
    );
    expect(warned[0]).toContain("seeded with 4 stored messages");
    // The new CLI session is the one resumed from now on, with the plain message.
    const d = await h2.submit({ channel: "test", sessionKey: key, text: "thanks" }).result;
    expect(d.text).toBe(`turn 2 in ${newSid}: thanks`);
  });

  it("falls back only once: a fresh session that fails too is an error reply", async () => {
    const engine = newEngine();
    const h = host(engine);
    const key = "agent:main:test:dm:twice";
    await h.submit({ channel: "test", sessionKey: key, text: "hello" }).result;
    const pid = Number(readFileSync(join(state, "pids.log"), "utf8").trim().split("\n").at(-1));
    process.kill(pid, "SIGKILL");
    await new Promise((r) => setImmediate(r));
    const r = await h.submit({ channel: "test", sessionKey: key, text: "CRASH again" }).result;
    expect(r.finishReason).toBe("error");
    expect(r.text).toMatch(/stopped unexpectedly \(exit code 3: fatal: simulated crash\)/);
    expect(argv().filter((a) => !a.includes("--resume"))).toHaveLength(2);
    expect(lines.filter((l) => l.includes("resuming CLI session"))).toHaveLength(1);
  });

  it("keeps the newest stored messages that fit and says how many were left out", () => {
    const msgs: ChatMessage[] = [
      { role: "system", content: "prompt" },
      { role: "system", content: "[Summary of earlier conversation]\nAda lives in Lyon." },
      ...Array.from({ length: 6 }, (_, i): ChatMessage => ({
        role: i % 2 ? "assistant" : "user",
        content: `m${i} ${"x".repeat(40)}`,
      })),
      { role: "user", content: "now?" },
    ];
    const s = seedText(msgs, 200);
    expect(s.text.startsWith("Conversation so far (the 4 oldest messages left out for room):")).toBe(true);
    expect(s.text).toContain("\n\n[Summary of earlier conversation]\nAda lives in Lyon.\n\n");
    expect(s.text).toContain("m5");
    expect(s.text).not.toContain("m2");
    expect(s.text.endsWith("Current message:\nnow?")).toBe(true);
    expect(s).toMatchObject({ included: 3, omitted: 4 });
    expect(
      seedText([
        { role: "system", content: "p" },
        { role: "user", content: "hi" },
      ]),
    ).toEqual({
      text: "hi",
      included: 0,
      omitted: 0,
    });
  });
});
