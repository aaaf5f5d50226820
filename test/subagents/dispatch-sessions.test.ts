/**
 * A dispatch graph's tasks run in sessions of their own, and what reports on them names those
 * sessions: the sync report and a background dispatch's announcement name each task's session key
 * (so the owner and the model can open it), and the announcement reads exactly those sessions, so a
 * task that read a web page taints the session the announcement lands in, even one made after
 * `/new`, while a graph whose tasks read nothing untrusted leaves it clean. The real agent host,
 * tools service and containment on SQLite, the fake model, a loopback fake site.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeStep } from "../fakes/openai-server.js";
import { startFakeSite, type FakeSite } from "../containment/fake-site.js";
import {
  createSubagentHarness,
  forModel,
  lastUser,
  messagesOf,
  modelsConfig,
  OWNER_KEY,
  systemMessages,
  toolResults,
  waitFor,
  type SubagentHarness,
} from "./harness.js";

let fake: FakeOpenAI;
let site: FakeSite;
let h: SubagentHarness | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  site = await startFakeSite();
});
afterAll(async () => {
  await site.close();
  await fake.close();
});
afterEach(async () => {
  await h?.agents.tasks.whenIdle();
  await h?.agents.host.drain(0);
  await h?.close();
  h = undefined;
  fake.reset();
});

function setup(): Promise<SubagentHarness> {
  return createSubagentHarness({
    models: modelsConfig(fake.baseUrl),
    agents: { main: {}, worker: { model: "f/worker-model" } },
    tools: { web: { allow_hosts: ["127.0.0.1"] } },
  });
}

/**
 * Worker replies by task: `a` optionally reads the fake site's page first; `b` answers slowly enough
 * (streamed, a real fake-provider delay) for the test to start a new session before it ends.
 */
function workers(aReadsPage: boolean): void {
  fake.setHandler((req): FakeStep | undefined => {
    if (req.model !== "worker-model") return undefined;
    const name = /^task (\w+)/.exec(lastUser(req))?.[1] ?? "";
    const afterTool = messagesOf(req).at(-1)?.role === "tool";
    if (name === "a" && aReadsPage && !afterTool)
      return { toolCalls: [{ name: "web_fetch", arguments: { url: `${site.url}/page` } }] };
    if (name === "a") return { text: "three facts" };
    return { text: "one summary", chunkSize: 1, delayMs: 40 };
  });
}

const graph = (mode: "sync" | "background") => ({
  mode,
  tasks: [
    { id: "a", agent: "worker", message: "task a: gather" },
    { id: "b", agent: "worker", message: "task b: summarise {{a.output}}", depends_on: ["a"] },
  ],
});

/** Runs a background dispatch, starts a new session while task b runs; returns the dispatch id. */
async function dispatchThenNew(hh: SubagentHarness): Promise<{ id: string; announce: string }> {
  fake.enqueue(
    { model: "main-model", toolCalls: [{ name: "dispatch", arguments: graph("background") }] },
    { model: "main-model", text: "Started it." },
    { model: "main-model", text: "Your dispatch is done." },
  );
  await hh.submit("run the graph in the background").result;
  const id = hh.agents.tasks.recent(OWNER_KEY)[0]?.id ?? "";
  expect(id).not.toBe("");
  await waitFor(
    () => forModel(fake.requests, "worker-model").some((r) => lastUser(r).startsWith("task b")),
    "task b to start",
  );
  hh.agents.host.reset(OWNER_KEY, "new");
  await waitFor(() => hh.agents.tasks.status(id)?.announce_status === "delivered", "the announcement");
  const req = forModel(fake.requests, "main-model").at(-1);
  const announce = systemMessages(req).find((s) => s.includes(`Background task ${id}`)) ?? "";
  return { id, announce };
}

function sourcesOfHead(hh: SubagentHarness): string[] {
  const head = hh.agents.host.sessions.head(OWNER_KEY);
  return hh.tools.containment.sourcesOf(head?.id ?? "").map((s) => s.kind);
}

describe("dispatch task sessions", () => {
  it("a background dispatch's announcement names each task's session and carries its taint past /new", async () => {
    h = await setup();
    workers(true);
    const { id, announce } = await dispatchThenNew(h);
    const keyA = `agent:worker:subagent:dm:${id}.a`;
    const keyB = `agent:worker:subagent:dm:${id}.b`;
    expect(announce).toContain(
      `Background task ${id} (a dispatch) finished. Task sessions: ${keyA}, ${keyB}.`,
    );
    expect(announce).toContain(`## a (worker): done`);
    expect(announce).toContain(`session ${keyA}`);
    // The named sessions are the ones that ran: each holds its task's transcript.
    for (const key of [keyA, keyB]) {
      const s = h.agents.host.sessions.head(key);
      expect(s).toBeDefined();
      expect(h.agents.host.sessions.messages(s!.id).some((m) => m.role === "assistant")).toBe(true);
    }
    // Task a read a page: the session the announcement landed in (made by /new) is tainted by it.
    expect(sourcesOfHead(h)).toContain("tainted_subagent");
  });

  it("a dispatch whose tasks read nothing untrusted leaves the new session clean", async () => {
    h = await setup();
    workers(false);
    const { announce } = await dispatchThenNew(h);
    expect(announce).toMatch(
      /Task sessions: agent:worker:subagent:dm:\w+\.a, agent:worker:subagent:dm:\w+\.b\./,
    );
    expect(sourcesOfHead(h)).toEqual([]);
  });

  it("a sync dispatch's report names each task's session, distinct for ids a key cannot hold", async () => {
    h = await setup();
    workers(false);
    const tasks = [
      { id: "a", agent: "worker", message: "task a: gather" },
      { id: "a:b c", agent: "worker", message: "task a: again" },
    ];
    fake.enqueue(
      { model: "main-model", toolCalls: [{ name: "dispatch", arguments: { tasks } }] },
      { model: "main-model", text: "done" },
    );
    await h.submit("run it").result;
    const report = toolResults(forModel(fake.requests, "main-model")[1])[0] ?? "";
    const keys = [...report.matchAll(/session (agent:worker:subagent:dm:\S+)/g)].map((m) => m[1] ?? "");
    expect(keys).toHaveLength(2);
    expect(keys[1]).toMatch(/\.a%3Ab%20c$/);
    expect(new Set(keys).size).toBe(2);
    for (const key of keys) expect(h.agents.host.sessions.head(key)).toBeDefined();
  });
});
