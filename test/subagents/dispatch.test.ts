/**
 * The `dispatch` tool through the real agent host with the fake OpenAI server behind a counting proxy:
 * the primary model calls `dispatch`, the worker agent's model answers each task. Concurrency is
 * measured at the proxy (requests in flight at once), not taken from the tool's own counter.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeStep } from "../fakes/openai-server.js";
import { FakeClock } from "../../internal/core/clock.js";
import { startCountingProxy, type CountingProxy } from "./counting-proxy.js";
import {
  createSubagentHarness,
  forModel,
  lastUser,
  modelsConfig,
  toolResults,
  waitFor,
  type SubagentHarness,
} from "./harness.js";

let fake: FakeOpenAI;
let proxy: CountingProxy;
let h: SubagentHarness | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  proxy = await startCountingProxy(fake.baseUrl);
});
afterAll(async () => {
  await proxy.close();
  await fake.close();
});
afterEach(async () => {
  await h?.agents.host.drain(0);
  await h?.close();
  h = undefined;
  fake.reset();
  proxy.resetPeaks();
});

function setup(subagents: Record<string, unknown> = {}, clock?: FakeClock): Promise<SubagentHarness> {
  return createSubagentHarness(
    {
      models: modelsConfig(proxy.baseUrl),
      tools: { max_result_chars: 50_000 },
      agents: {
        main: {},
        worker: { model: "f/worker-model" },
        defaults: { subagents },
      },
    },
    clock ? { clock } : {},
  );
}

/** Worker replies keyed by the task name: every task message starts with `task <name>`. */
function workerReplies(replies: Record<string, FakeStep>): void {
  fake.setHandler((req) => {
    if (req.model !== "worker-model") return undefined;
    const name = /^task (\w+)/.exec(lastUser(req))?.[1] ?? "";
    return replies[name] ?? { text: `no scripted reply for ${name}` };
  });
}

/** The primary model dispatches `args`, then says `after`. */
function dispatchVia(args: object, after = "finished"): void {
  fake.enqueue(
    { model: "main-model", toolCalls: [{ name: "dispatch", arguments: args }] },
    { model: "main-model", text: after },
  );
}

const workerTexts = (): string[] => forModel(fake.requests, "worker-model").map((r) => lastUser(r));
const dispatchResult = (): string => toolResults(forModel(fake.requests, "main-model")[1])[0] ?? "";

describe("dispatch", () => {
  it("runs a diamond in dependency order with {{id.output}} interpolation capped at 4000 characters, with progress lines", async () => {
    h = await setup();
    workerReplies({
      a: { text: "x".repeat(4500) },
      b: { text: "summary-B" },
      c: { text: "title-C" },
      d: { text: "merged" },
    });
    dispatchVia({
      tasks: [
        { id: "a", agent: "worker", message: "task a: write the draft" },
        { id: "b", agent: "worker", message: "task b: summarise {{a.output}}", depends_on: ["a"] },
        { id: "c", agent: "worker", message: "task c: title for {{a.output}}", depends_on: ["a"] },
        {
          id: "d",
          agent: "worker",
          message: "task d: merge {{b.output}} | {{c.output}}",
          depends_on: ["b", "c"],
        },
      ],
    });
    const r = await h.submit("run the graph").result;
    expect(r.text).toBe("finished");
    const texts = workerTexts();
    expect(texts[0]).toBe("task a: write the draft");
    expect(texts.slice(1, 3).sort()).toEqual([
      `task b: summarise ${"x".repeat(4000)}\n[... truncated 500 characters]`,
      `task c: title for ${"x".repeat(4000)}\n[... truncated 500 characters]`,
    ]);
    expect(texts[3]).toBe("task d: merge summary-B | title-C");
    expect(texts).toHaveLength(4);

    const out = dispatchResult();
    expect(out).toMatch(/^Dispatch finished: 4\/4 tasks done \(peak concurrency 2\)\./);
    expect(out).toMatch(
      /## a \(worker\): done, \d+\.\d s, session agent:worker:subagent:dm:\w+\.\w+\nx{4000}\n\[\.\.\. truncated\]/,
    );
    expect(out).toMatch(
      /## d \(worker\): done, \d+\.\d s, session agent:worker:subagent:dm:\w+\.\w+\nmerged$/,
    );
    expect(h.channel.sent[0]?.text).toBe("Dispatching 4 tasks: a, b, c, d");
    expect(h.channel.sent.slice(1).map((m) => m.text)).toEqual([
      "✓ a done (worker)",
      expect.stringMatching(/^✓ [bc] done \(worker\)$/),
      expect.stringMatching(/^✓ [bc] done \(worker\)$/),
      "✓ d done (worker)",
    ]);
    expect(h.channel.sent.every((m) => m.target === "owner")).toBe(true);
  });

  it("a blocking failure cancels its dependents and the tasks still running", async () => {
    h = await setup();
    workerReplies({
      slow: { hang: true },
      bad: { error: { status: 400, message: "the worker model refused task bad" } },
    });
    dispatchVia({
      tasks: [
        { id: "slow", agent: "worker", message: "task slow" },
        { id: "bad", agent: "worker", message: "task bad" },
        { id: "after", agent: "worker", message: "task after", depends_on: ["bad"] },
        { id: "later", agent: "worker", message: "task later", depends_on: ["slow"] },
      ],
    });
    const r = await h.submit("run the graph").result;
    expect(r.text).toBe("finished");
    const out = dispatchResult();
    expect(out).toMatch(/^Dispatch finished: 0\/4 tasks done/);
    expect(out).toMatch(/## slow \(worker\): cancelled/);
    expect(out).toMatch(
      /## bad \(worker\): failed, [\d.]+ s, session agent:worker:subagent:dm:\w+\.\w+\n.*refused task bad/,
    );
    expect(out).toMatch(/## after \(worker\): cancelled/);
    expect(out).toMatch(/## later \(worker\): cancelled/);
    expect(workerTexts().sort()).toEqual(["task bad", "task slow"]);
    expect(proxy.inFlight("worker-model")).toBe(0);
  });

  it("a non-blocking failure lets the rest continue and skips only its dependents", async () => {
    h = await setup();
    workerReplies({
      opt: { error: { status: 400, message: "optional task failed" } },
      indep: { text: "indep-out" },
      final: { text: "final-out" },
    });
    dispatchVia({
      tasks: [
        { id: "opt", agent: "worker", message: "task opt", blocking: false },
        { id: "dep", agent: "worker", message: "task dep uses {{opt.output}}", depends_on: ["opt"] },
        { id: "indep", agent: "worker", message: "task indep" },
        { id: "final", agent: "worker", message: "task final {{indep.output}}", depends_on: ["indep"] },
      ],
    });
    await h.submit("run the graph").result;
    const out = dispatchResult();
    expect(out).toMatch(/^Dispatch finished: 2\/4 tasks done/);
    expect(out).toMatch(/## opt \(worker\): failed/);
    expect(out).toMatch(/## dep \(worker\): skipped/);
    expect(out).toMatch(
      /## indep \(worker\): done, [\d.]+ s, session agent:worker:subagent:dm:\w+\.\w+\nindep-out/,
    );
    expect(out).toMatch(
      /## final \(worker\): done, [\d.]+ s, session agent:worker:subagent:dm:\w+\.\w+\nfinal-out/,
    );
    expect(workerTexts()).not.toContain("task dep uses ");
    expect(workerTexts()).toContain("task final indep-out");
  });

  it("a cycle is rejected before anything runs, naming the tasks", async () => {
    h = await setup();
    workerReplies({});
    dispatchVia({
      tasks: [
        { id: "a", agent: "worker", message: "task a", depends_on: ["b"] },
        { id: "b", agent: "worker", message: "task b", depends_on: ["a"] },
        { id: "c", agent: "worker", message: "task c" },
      ],
    });
    await h.submit("run the graph").result;
    expect(dispatchResult()).toBe("the task graph has a cycle among: a -> b -> a");
    expect(forModel(fake.requests, "worker-model")).toHaveLength(0);
    expect(h.channel.sent).toEqual([]);
  });

  it("duplicate ids and unknown dependencies are errors naming the tasks", async () => {
    h = await setup();
    const dup = await h.callTool("dispatch", {
      tasks: [
        { id: "x", agent: "worker", message: "task x" },
        { id: "x", agent: "worker", message: "task x again" },
      ],
    });
    expect(dup).toEqual({ isError: true, content: "duplicate task ids: x" });
    const unknown = await h.callTool("dispatch", {
      tasks: [{ id: "y", agent: "worker", message: "task y", depends_on: ["ghost"] }],
    });
    expect(unknown).toEqual({ isError: true, content: "unknown dependencies: y -> ghost" });
    const agent = await h.callTool("dispatch", { tasks: [{ id: "z", agent: "nobody", message: "task z" }] });
    expect(agent).toEqual({ isError: true, content: 'task z: unknown agent "nobody"' });
    expect(fake.requests).toHaveLength(0);
  });

  it("a task that exceeds timeout_seconds fails with a timeout (fake clock)", async () => {
    const clock = new FakeClock();
    h = await setup({ progress_updates: false }, clock);
    workerReplies({ stuck: { hang: true }, quick: { text: "quick-out" } });
    dispatchVia({
      tasks: [
        { id: "stuck", agent: "worker", message: "task stuck", timeout_seconds: 2, blocking: false },
        { id: "quick", agent: "worker", message: "task quick" },
      ],
    });
    const turn = h.submit("run the graph");
    await waitFor(() => workerTexts().length === 2, "both worker requests");
    await clock.advance(2000);
    await turn.result;
    const out = dispatchResult();
    expect(out).toMatch(
      /## stuck \(worker\): failed, 2\.0 s, session agent:worker:subagent:dm:\w+\.\w+\ntimed out after 2 s/,
    );
    expect(out).toMatch(/## quick \(worker\): done/);
    expect(h.channel.sent).toEqual([]);
  });

  it("never exceeds the concurrency limit (measured at the model server)", async () => {
    h = await setup({ max_concurrent: 2 });
    const slow: FakeStep = { text: "a reply that streams slowly in small chunks", chunkSize: 4, delayMs: 15 };
    workerReplies({ n1: slow, n2: slow, n3: slow, n4: slow, n5: slow, n6: slow });
    const tasks = ["n1", "n2", "n3", "n4", "n5", "n6"].map((id) => ({
      id,
      agent: "worker",
      message: `task ${id}`,
    }));
    dispatchVia({ tasks });
    await h.submit("six tasks").result;
    expect(dispatchResult()).toMatch(/^Dispatch finished: 6\/6 tasks done/);
    expect(proxy.peak("worker-model")).toBe(2);

    // The tool argument overrides the default for one dispatch.
    proxy.resetPeaks();
    fake.reset();
    workerReplies({ n1: slow, n2: slow, n3: slow, n4: slow, n5: slow, n6: slow });
    dispatchVia({ tasks, max_concurrent: 3 });
    await h.submit("again, three at a time").result;
    expect(dispatchResult()).toMatch(/^Dispatch finished: 6\/6 tasks done/);
    expect(proxy.peak("worker-model")).toBe(3);
  });

  it("async delegations never exceed agents.defaults.subagents.max_concurrent (measured)", async () => {
    h = await setup({ max_concurrent: 2 });
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: ["j1", "j2", "j3", "j4", "j5"].map((j) => ({
          name: "delegate",
          arguments: { agent: "worker", message: `task ${j}`, mode: "async" },
        })),
      },
      { model: "main-model", text: "five started" },
    );
    const base = fake.requests.length;
    fake.setHandler((req) => {
      if (req.model === "main-model") return { text: "a task finished" };
      const name = /^task (\w+)/.exec(lastUser(req))?.[1] ?? "";
      return { text: `done ${name}`, chunkSize: 2, delayMs: 15 };
    });
    await h.submit("five in the background").result;
    const hh = h;
    await waitFor(
      () =>
        hh.core.db
          .prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM subagent_tasks WHERE status = 'done'")
          .get()?.n === 5,
      "five tasks done",
    );
    await h.agents.tasks.whenIdle();
    expect(fake.requests.length).toBeGreaterThan(base);
    expect(proxy.peak("worker-model")).toBe(2);
    expect(h.agents.tasks.peakConcurrency()).toBe(2);
  });
});
