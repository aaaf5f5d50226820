/**
 * The `delegate` tool through the real agent host (assembled as the daemon does it) with the fake
 * OpenAI server: the primary model calls `delegate`, the subagent's model answers.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeStep } from "../fakes/openai-server.js";
import { FakeClock } from "../../internal/core/clock.js";
import { ANNOUNCE_BACKOFF_MS } from "../../internal/agent/subagents/task-manager.js";
import {
  createSubagentHarness,
  forModel,
  lastUser,
  modelsConfig,
  OWNER_KEY,
  OWNER_TARGET,
  systemMessages,
  toolResults,
  waitFor,
  type SubagentHarness,
} from "./harness.js";

let fake: FakeOpenAI;
let h: SubagentHarness | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  await h?.agents.tasks.whenIdle();
  await h?.close();
  h = undefined;
  fake.reset();
});

const agents = {
  main: {},
  researcher: {
    model: "f/researcher-model",
    description: "finds facts",
    capabilities: [{ name: "web-research", tags: ["facts", "sources"], strength: 0.8 }],
  },
  coder: {
    model: "f/coder-model",
    capabilities: [{ name: "code-review", tags: ["typescript", "golang"], strength: 0.9 }],
  },
};

function setup(extra: Record<string, unknown> = {}, clock?: FakeClock): Promise<SubagentHarness> {
  return createSubagentHarness(
    { models: modelsConfig(fake.baseUrl), agents: { ...agents, ...extra } },
    clock ? { clock } : {},
  );
}

const call = (args: object): FakeStep => ({
  model: "main-model",
  toolCalls: [{ name: "delegate", arguments: args }],
});

/** Stored messages of the owner's session (role, content). */
function stored(hh: SubagentHarness): { role: string; content: string }[] {
  const s = hh.agents.host.sessions.head(OWNER_KEY);
  return s ? hh.agents.host.sessions.messages(s.id).map((m) => ({ role: m.role, content: m.content })) : [];
}

describe("delegate", () => {
  it("sync: the subagent's answer comes back as the tool result of the parent's call", async () => {
    h = await setup();
    fake.enqueue(
      call({ agent: "researcher", message: "What is the boiling point of water at sea level?" }),
      { model: "researcher-model", text: "100 degrees Celsius." },
      { model: "main-model", text: "Water boils at 100 °C." },
    );
    const r = await h.submit("ask the researcher").result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe("Water boils at 100 °C.");
    const child = forModel(fake.requests, "researcher-model");
    expect(child).toHaveLength(1);
    expect(lastUser(child[0])).toBe("What is the boiling point of water at sea level?");
    const parent = forModel(fake.requests, "main-model");
    expect(toolResults(parent[1])).toEqual(["[researcher] 100 degrees Celsius."]);
    // The child's usage rolls up into the parent's call tree.
    expect(r.subCalls).toBeGreaterThanOrEqual(3);
  });

  it("sync: agents.defaults.subagents.model applies when the caller names no model; a named model wins", async () => {
    h = await setup({ defaults: { subagents: { model: "f/cheap-model" } } });
    fake.enqueue(
      call({ agent: "researcher", message: "first question" }),
      { model: "cheap-model", text: "cheap answer" },
      call({ agent: "researcher", message: "second question", model: "f/coder-model" }),
      { model: "coder-model", text: "named answer" },
      { model: "main-model", text: "Both answered." },
    );
    const r = await h.submit("ask twice").result;
    expect(r.text).toBe("Both answered.");
    expect(forModel(fake.requests, "cheap-model").map(lastUser)).toEqual(["first question"]);
    expect(forModel(fake.requests, "coder-model").map(lastUser)).toEqual(["second question"]);
    expect(forModel(fake.requests, "researcher-model")).toHaveLength(0);
    const parent = forModel(fake.requests, "main-model");
    expect(toolResults(parent[2])).toEqual(["[researcher] cheap answer", "[researcher] named answer"]);
  });

  it("async: returns a task id at once; the result is announced to the originating session as a system event and delivered to its channel", async () => {
    h = await setup();
    fake.enqueue(
      call({ agent: "researcher", message: "Collect sources on tides", mode: "async" }),
      { model: "main-model", text: "Started; I will tell you when it is done." },
      { model: "researcher-model", text: "Three sources: NOAA, BBC, Wikipedia." },
      { model: "main-model", text: "Your tide research is done: NOAA, BBC and Wikipedia." },
    );
    const r = await h.submit("research tides in the background").result;
    expect(r.text).toBe("Started; I will tell you when it is done.");
    const started = toolResults(forModel(fake.requests, "main-model")[1])[0] ?? "";
    const id = /background task (\S+) on agent researcher/.exec(started)?.[1];
    expect(id).toBeTruthy();

    await h.channel.waitFor(1);
    await h.agents.tasks.whenIdle();
    expect(h.channel.sent.map((m) => `${m.target}|${m.text}`)).toEqual([
      "owner|Your tide research is done: NOAA, BBC and Wikipedia.",
    ]);
    const task = h.agents.tasks.status(id as string);
    expect(task).toMatchObject({
      status: "done",
      result: "Three sources: NOAA, BBC, Wikipedia.",
      announce_status: "delivered",
      origin_session_key: OWNER_KEY,
      reply_target: OWNER_TARGET,
    });
    // The announcement turn saw the result as a system event, not as something the user said.
    const announceReq = forModel(fake.requests, "main-model")[2];
    expect(systemMessages(announceReq).some((s) => s.includes("[system event] Background task"))).toBe(true);
    expect(lastUser(announceReq)).toBe("research tides in the background");
    const events = stored(h).filter((m) => m.role === "event");
    expect(events).toHaveLength(1);
    expect(events[0]?.content).toContain("Three sources: NOAA, BBC, Wikipedia.");
    expect(stored(h).filter((m) => m.role === "user")).toHaveLength(1);
    expect(stored(h).at(-1)).toEqual({
      role: "assistant",
      content: "Your tide research is done: NOAA, BBC and Wikipedia.",
    });
  });

  it("async: a failing delivery is retried with backoff without re-running the announcement turn", async () => {
    const clock = new FakeClock();
    h = await setup({}, clock);
    h.channel.failWith = new Error("channel down");
    fake.enqueue(
      call({ agent: "researcher", message: "summarise the report", mode: "async" }),
      { model: "main-model", text: "On it." },
      { model: "researcher-model", text: "The report says yes." },
      { model: "main-model", text: "The report says yes." },
    );
    await h.submit("summarise in the background").result;
    const hh = h;
    await waitFor(() => hh.channel.attempts === 1, "first delivery attempt");
    await clock.advance(ANNOUNCE_BACKOFF_MS[0] ?? 0);
    await waitFor(() => hh.channel.attempts === 2, "second delivery attempt");
    h.channel.failWith = undefined;
    await clock.advance(ANNOUNCE_BACKOFF_MS[1] ?? 0);
    await h.agents.tasks.whenIdle();
    expect(h.channel.attempts).toBe(3);
    expect(h.channel.sent.map((m) => m.text)).toEqual(["The report says yes."]);
    // One announcement turn only: the retries re-sent its reply.
    expect(forModel(fake.requests, "main-model")).toHaveLength(3);
    expect(stored(h).filter((m) => m.role === "event")).toHaveLength(1);
    expect(h.agents.tasks.recent(OWNER_KEY)[0]?.announce_status).toBe("delivered");
  });

  it("async: a delivery that keeps failing is logged and kept for `delegate status`", async () => {
    const clock = new FakeClock();
    h = await setup({}, clock);
    h.channel.failWith = new Error("channel down");
    fake.enqueue(
      call({ agent: "researcher", message: "count the files", mode: "async" }),
      { model: "main-model", text: "Started." },
      { model: "researcher-model", text: "42 files." },
      { model: "main-model", text: "There are 42 files." },
    );
    await h.submit("count files in the background").result;
    const hh = h;
    for (let i = 0; i < ANNOUNCE_BACKOFF_MS.length; i++) {
      await waitFor(() => hh.channel.attempts === i + 1, `delivery attempt ${i + 1}`);
      await clock.advance(ANNOUNCE_BACKOFF_MS[i] ?? 0);
    }
    await h.agents.tasks.whenIdle();
    expect(h.channel.attempts).toBe(ANNOUNCE_BACKOFF_MS.length + 1);
    const row = h.agents.tasks.recent(OWNER_KEY)[0];
    expect(row).toMatchObject({ status: "done", announce_status: "failed", announce_error: "channel down" });
    const list = await h.callTool("delegate", { action: "status" });
    expect(list.content).toBe(`${row?.id} researcher done (announcement failed)`);
    const one = await h.callTool("delegate", { action: "status", task_id: row?.id });
    expect(one.content).toContain("result: 42 files.");
  });

  it("async: `delegate cancel` stops a running task; a cancelled task is not announced", async () => {
    h = await setup();
    fake.enqueue(
      call({ agent: "researcher", message: "an endless job", mode: "async" }),
      { model: "main-model", text: "Started." },
      { model: "researcher-model", hang: true },
    );
    await h.submit("start the endless job").result;
    const hh = h;
    await waitFor(() => forModel(fake.requests, "researcher-model").length === 1, "subagent request");
    const id = h.agents.tasks.recent(OWNER_KEY)[0]?.id ?? "";
    expect((await h.callTool("delegate", { action: "cancel", task_id: id })).content).toBe(
      `task ${id} cancelled`,
    );
    expect((await h.callTool("delegate", { action: "cancel", task_id: id })).content).toBe(
      `task ${id} is not running`,
    );
    await waitFor(() => hh.agents.host.queueDepth() === 0, "the child turn to stop");
    await h.agents.tasks.whenIdle();
    expect(h.agents.tasks.status(id)).toMatchObject({ status: "cancelled", announce_status: null });
    expect(forModel(fake.requests, "main-model")).toHaveLength(2);
    expect(h.channel.sent).toEqual([]);
  });

  it("depth limit: the default is 5 and the call past it is a recursion_depth_exceeded result, not a crash", async () => {
    h = await setup({
      a1: { model: "f/a1-model" },
      a2: { model: "f/a2-model" },
    });
    // a1 and a2 delegate to each other until the limit refuses; then each answers.
    fake.setHandler((req) => {
      const other = req.model === "a1-model" ? "a2" : "a1";
      if (req.model !== "a1-model" && req.model !== "a2-model") return undefined;
      const results = toolResults(req);
      if (results.length === 0)
        return { toolCalls: [{ name: "delegate", arguments: { agent: other, message: "go deeper" } }] };
      return { text: `${req.model} saw: ${(results[0] ?? "").slice(0, 60)}` };
    });
    fake.enqueue(call({ agent: "a1", message: "go deeper" }), { model: "main-model", text: "done" });
    const r = await h.submit("start the chain").result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe("done");
    const sub = fake.requests.filter((q) => q.model === "a1-model" || q.model === "a2-model");
    // Depths 1..5 each made two requests (delegate, then answer); depth 6 never ran.
    expect(sub).toHaveLength(10);
    const refused = sub
      .flatMap((q) => toolResults(q))
      .filter((t) => t.startsWith("recursion_depth_exceeded"));
    expect(refused).toEqual(["recursion_depth_exceeded: delegation depth 6 exceeds the limit of 5"]);
    // Every level still answered its parent.
    expect(toolResults(forModel(fake.requests, "main-model")[1])[0]).toMatch(/^\[a1\] a1-model saw: \[a2\]/);
  });

  it("depth limit: agents.defaults.subagents.max_depth applies", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: {
        ...agents,
        defaults: { subagents: { max_depth: 1 } },
      },
    });
    fake.enqueue(
      call({ agent: "researcher", message: "dig" }),
      {
        model: "researcher-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "coder", message: "x" } }],
      },
      { model: "researcher-model", text: "could not go deeper" },
      { model: "main-model", text: "ok" },
    );
    const r = await h.submit("dig").result;
    expect(r.text).toBe("ok");
    expect(toolResults(forModel(fake.requests, "researcher-model")[1])).toEqual([
      "recursion_depth_exceeded: delegation depth 2 exceeds the limit of 1",
    ]);
    expect(forModel(fake.requests, "coder-model")).toHaveLength(0);
  });

  it("capability routing: without an agent the best capability match is chosen, and the prompt lists capabilities", async () => {
    h = await setup();
    fake.enqueue(
      call({ message: "Please review this TypeScript function for bugs" }),
      { model: "coder-model", text: "Looks fine." },
      call({ message: "Find facts and sources about the Moon" }),
      { model: "researcher-model", text: "It orbits Earth." },
      call({ message: "Bake a cake" }),
      { model: "main-model", text: "done" },
    );
    const r = await h.submit("route these").result;
    expect(r.text).toBe("done");
    const main = forModel(fake.requests, "main-model");
    expect(toolResults(main[1])).toEqual(["[coder] Looks fine."]);
    expect(toolResults(main[2]).at(-1)).toBe("[researcher] It orbits Earth.");
    expect(toolResults(main[3]).at(-1)).toBe(
      "no agent's capabilities match this task; name an agent explicitly",
    );
    const prompt = systemMessages(main[0])[0] ?? "";
    expect(prompt).toContain("- coder — code-review [typescript, golang] (0.9)");
    expect(prompt).toContain("- researcher: finds facts — web-research [facts, sources] (0.8)");
  });

  it("nested async tasks never wait on a slot held by their parent (max_concurrent 1)", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { ...agents, defaults: { subagents: { max_concurrent: 1 } } },
    });
    fake.enqueue(
      call({ agent: "researcher", message: "outer job", mode: "async" }),
      { model: "main-model", text: "outer started" },
      // The outer task (holding the only depth-1 slot) starts an inner async task and a sync one.
      {
        model: "researcher-model",
        toolCalls: [
          { name: "delegate", arguments: { agent: "coder", message: "inner async", mode: "async" } },
          { name: "delegate", arguments: { agent: "coder", message: "inner sync" } },
        ],
      },
      { model: "coder-model", text: "coder answer" },
      { model: "coder-model", text: "coder answer" },
      { model: "researcher-model", text: "outer done" },
    );
    fake.setHandler((req) => (req.model === "main-model" ? { text: "noted" } : undefined));
    await h.submit("nest").result;
    const hh = h;
    const rows = await waitFor(() => {
      const all = hh.core.db
        .prepare<[], { agent_id: string; status: string; depth: number }>(
          "SELECT agent_id, status, depth FROM subagent_tasks ORDER BY depth",
        )
        .all();
      return all.length === 2 && all.every((t) => t.status === "done") ? all : undefined;
    }, "both async tasks done");
    expect(rows).toEqual([
      { agent_id: "researcher", status: "done", depth: 1 },
      { agent_id: "coder", status: "done", depth: 2 },
    ]);
    expect(toolResults(forModel(fake.requests, "researcher-model")[1])).toContain("[coder] coder answer");
  });
});
