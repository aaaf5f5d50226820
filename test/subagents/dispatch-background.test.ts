/**
 * `dispatch` with `mode: background` (the spec's DispatchTool through the task manager) and the
 * spec's AsyncAgents (`agents.defaults.subagents.async_agents`), through the real agent host with the
 * fake OpenAI server: the calling turn is not held, progress and the final report reach the chat, and
 * `status`/`cancel` work through both `dispatch` and `delegate`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeStep } from "../fakes/openai-server.js";
import {
  createSubagentHarness,
  forModel,
  lastUser,
  modelsConfig,
  OWNER_KEY,
  systemMessages,
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
  await h?.agents.host.drain(0);
  await h?.close();
  h = undefined;
  fake.reset();
});

function setup(subagents: Record<string, unknown> = {}): Promise<SubagentHarness> {
  return createSubagentHarness({
    models: modelsConfig(fake.baseUrl),
    agents: {
      main: {},
      worker: { model: "f/worker-model" },
      researcher: { model: "f/researcher-model" },
      defaults: { subagents },
    },
  });
}

/** Worker replies keyed by the task name: every task message starts with `task <name>`. */
function workerReplies(replies: Record<string, FakeStep>): void {
  fake.setHandler((req) => {
    if (req.model !== "worker-model") return undefined;
    const name = /^task (\w+)/.exec(lastUser(req))?.[1] ?? "";
    return replies[name] ?? { text: `no scripted reply for ${name}` };
  });
}

const graph = {
  mode: "background",
  tasks: [
    { id: "a", agent: "worker", message: "task a: gather" },
    { id: "b", agent: "worker", message: "task b: summarise {{a.output}}", depends_on: ["a"] },
  ],
};

describe("dispatch in the background", () => {
  it("returns at once; progress lines and the report are announced to the chat", async () => {
    h = await setup();
    workerReplies({ a: { text: "three facts" }, b: { text: "one summary" } });
    fake.enqueue(
      { model: "main-model", toolCalls: [{ name: "dispatch", arguments: graph }] },
      { model: "main-model", text: "Started it." },
      { model: "main-model", text: "Your dispatch is done: one summary." },
    );
    const r = await h.submit("run the research graph in the background").result;
    expect(r.text).toBe("Started it.");
    const started = forModel(fake.requests, "main-model")[1];
    const toolMsg = (started?.body?.messages ?? []).at(-1);
    const id = /Started background dispatch (\w+) \(2 tasks: a, b\)/.exec(String(toolMsg?.content))?.[1];
    expect(id).toBeTruthy();
    const hh = h;
    await waitFor(() => hh.channel.sent.length === 4, "progress lines and the announcement");
    await h.agents.tasks.whenIdle();
    expect(h.channel.sent.map((m) => m.text)).toEqual([
      `Dispatching 2 tasks in the background (task ${id}): a, b`,
      "✓ a done (worker)",
      "✓ b done (worker)",
      "Your dispatch is done: one summary.",
    ]);
    // The announcement turn got the whole report as a system event.
    const announce = forModel(fake.requests, "main-model")[2];
    const event = systemMessages(announce).find((s) =>
      s.includes(`Background task ${id} (a dispatch) finished`),
    );
    expect(event).toContain("Dispatch finished: 2/2 tasks done");
    expect(event).toContain("## b (worker): done");
    expect(lastUser(forModel(fake.requests, "worker-model")[1])).toBe("task b: summarise three facts");
    expect(h.agents.tasks.status(id as string)).toMatchObject({
      agent_id: "dispatch",
      status: "done",
      announce_status: "delivered",
    });
    // status through either tool lists it.
    expect((await h.callTool("dispatch", { action: "status" })).content).toBe(`${id} dispatch done`);
    expect((await h.callTool("delegate", { action: "status", task_id: id })).content).toContain(
      `task ${id}: agent dispatch, status done`,
    );
  });

  it("does not hold the chat's queue, and cancel stops the running graph without an announcement", async () => {
    h = await setup();
    workerReplies({ a: { hang: true } });
    fake.enqueue(
      { model: "main-model", toolCalls: [{ name: "dispatch", arguments: graph }] },
      { model: "main-model", text: "Started it." },
      { model: "main-model", text: "Meanwhile: hello." },
    );
    await h.submit("run it").result;
    const hh = h;
    await waitFor(() => forModel(fake.requests, "worker-model").length === 1, "task a to start");
    // The next message is answered while the graph is still running.
    expect((await h.submit("hello?").result).text).toBe("Meanwhile: hello.");
    const id = h.agents.tasks.recent(OWNER_KEY)[0]?.id ?? "";
    expect((await h.callTool("dispatch", { action: "status", task_id: id })).content).toMatch(
      new RegExp(`^task ${id}: agent dispatch, status running`),
    );
    expect((await h.callTool("dispatch", { action: "cancel", task_id: id })).content).toBe(
      `task ${id} cancelled`,
    );
    await waitFor(() => hh.agents.host.queueDepth() === 0, "the child turn to stop");
    await h.agents.tasks.whenIdle();
    expect(h.agents.tasks.status(id)).toMatchObject({ status: "cancelled", announce_status: null });
    expect(forModel(fake.requests, "worker-model")).toHaveLength(1); // b never ran
    expect(h.channel.sent.map((m) => m.text)).toEqual([
      `Dispatching 2 tasks in the background (task ${id}): a, b`,
      "✗ a cancelled",
    ]);
    expect(forModel(fake.requests, "main-model")).toHaveLength(3); // no announcement turn
  });

  it("a stranger cannot see or cancel the owner's background dispatch from another session", async () => {
    h = await setup();
    workerReplies({ a: { hang: true } });
    fake.enqueue(
      { model: "main-model", toolCalls: [{ name: "dispatch", arguments: graph }] },
      { model: "main-model", text: "Started it." },
    );
    await h.submit("run it").result;
    const id = h.agents.tasks.recent(OWNER_KEY)[0]?.id ?? "";
    const other = { sessionKey: "agent:main:test:dm:stranger" };
    expect((await h.callTool("dispatch", { action: "status" }, other)).content).toBe(
      "No background tasks for this session.",
    );
    expect((await h.callTool("dispatch", { action: "status", task_id: id }, other)).content).toBe(
      `no task ${id}`,
    );
    expect((await h.callTool("dispatch", { action: "cancel", task_id: id }, other)).content).toBe(
      `task ${id} is not running`,
    );
    expect(h.agents.tasks.status(id)?.status).toBe("running");
    h.agents.tasks.cancel(id);
  });
});

describe("a background dispatch and a daemon stop", () => {
  it("is interrupted by the drain, not announced during shutdown, and announced by the next start", async () => {
    h = await setup();
    workerReplies({ a: { hang: true } });
    fake.enqueue(
      { model: "main-model", toolCalls: [{ name: "dispatch", arguments: graph }] },
      { model: "main-model", text: "Started it." },
    );
    await h.submit("run it").result;
    const hh = h;
    await waitFor(() => forModel(fake.requests, "worker-model").length === 1, "task a to start");
    const id = h.agents.tasks.recent(OWNER_KEY)[0]?.id ?? "";
    await h.agents.host.drain(0);
    await h.agents.tasks.whenIdle();
    expect(h.agents.tasks.status(id)).toMatchObject({ status: "interrupted", announce_status: null });
    expect(forModel(fake.requests, "main-model")).toHaveLength(2); // no announcement turn
    await h.stop();
    fake.enqueue({ model: "main-model", text: "The dispatch was interrupted by a restart." });
    const h2 = await createSubagentHarness(
      { models: modelsConfig(fake.baseUrl), agents: { main: {}, worker: { model: "f/worker-model" } } },
      { dir: hh.core.dir },
    );
    try {
      await h2.channel.waitFor(1);
      await h2.agents.tasks.whenIdle();
      expect(h2.channel.sent.map((m) => m.text)).toEqual(["The dispatch was interrupted by a restart."]);
      expect(h2.agents.tasks.status(id)).toMatchObject({
        status: "interrupted",
        announce_status: "delivered",
      });
      const announce = forModel(fake.requests, "main-model").at(-1);
      expect(
        systemMessages(announce).some((m) =>
          m.includes(`Background task ${id} (a dispatch) ended with status interrupted`),
        ),
      ).toBe(true);
    } finally {
      await h2.close();
    }
  });
});

describe("AsyncAgents (agents.defaults.subagents.async_agents)", () => {
  it("a delegation to an always-async agent never blocks, even when the model asked for sync", async () => {
    h = await setup({ async_agents: ["researcher"] });
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "researcher", message: "dig" } }],
      },
      { model: "main-model", text: "Asked the researcher." },
      { model: "researcher-model", text: "Found it." },
      { model: "main-model", text: "The researcher found it." },
    );
    const r = await h.submit("research this").result;
    expect(r.text).toBe("Asked the researcher.");
    const toolMsg = (forModel(fake.requests, "main-model")[1]?.body?.messages ?? []).at(-1);
    expect(String(toolMsg?.content)).toMatch(/^Started background task \w+ on agent researcher\./);
    const hh = h;
    await waitFor(() => hh.channel.sent.length === 1, "the announcement");
    expect(h.channel.sent.map((m) => m.text)).toEqual(["The researcher found it."]);
    // Other agents stay synchronous.
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "worker", message: "task w" } }],
      },
      { model: "worker-model", text: "worked" },
      { model: "main-model", text: "done" },
    );
    await h.submit("ask the worker").result;
    const last = (forModel(fake.requests, "main-model").at(-1)?.body?.messages ?? []).at(-1);
    expect(String(last?.content)).toBe("[worker] worked");
  });
});
