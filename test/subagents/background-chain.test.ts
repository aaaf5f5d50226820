/**
 * Issue 34 item 5: background work has a bound. A model that starts another background task on
 * every announcement (the issue saw ~15 rounds in 6 s) is stopped at
 * `agents.defaults.subagents.max_chain`: the start is refused with the reason as the tool result,
 * the owner gets a message, and no further task row exists. Real host, real SQLite, fake model.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import {
  createSubagentHarness,
  modelsConfig,
  OWNER_KEY,
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
  await h?.agents.host.drain(0);
  await h?.close();
  h = undefined;
  fake.reset();
});

/** The main model re-dispatches on every turn that does not already carry a tool result. */
function reDispatchForever(): void {
  fake.setHandler((req) => {
    if (req.model === "worker-model") return { text: "worker done" };
    const last = (req.body?.messages ?? []).at(-1);
    if (last?.role === "tool") return { text: "ok" };
    return {
      toolCalls: [{ name: "delegate", arguments: { agent: "worker", message: "do more", mode: "async" } }],
    };
  });
}

function taskCount(): number {
  return (
    h!.core.ctx.db
      .prepare("SELECT COUNT(*) AS n FROM subagent_tasks WHERE origin_session_key = ?")
      .get(OWNER_KEY) as { n: number }
  ).n;
}

async function settle(): Promise<void> {
  // Announcements start turns that may start tasks whose announcements start turns...
  for (let i = 0; i < 20; i++) {
    await h!.agents.tasks.whenIdle();
    await h!.agents.host.drain(5_000);
    await new Promise((r) => setTimeout(r, 20));
    if (
      !h!.core.ctx.db
        .prepare(
          "SELECT 1 FROM subagent_tasks WHERE status IN ('queued','running') OR announce_status = 'pending'",
        )
        .get()
    )
      return;
  }
}

describe("chained background work", () => {
  it("stops at max_chain: the refusal reaches the model and the owner, nothing more runs", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: {}, worker: { model: "f/worker-model" }, defaults: { subagents: { max_chain: 2 } } },
    });
    reDispatchForever();
    await h.submit("start the work").result;
    await waitFor(() => taskCount() >= 1, "first task");
    await settle();
    // Chain 0 (the owner's turn), 1 and 2 (announcements); the announcement of chain 2 is refused.
    expect(taskCount()).toBe(3);
    const chains = (
      h.core.ctx.db
        .prepare("SELECT chain FROM subagent_tasks WHERE origin_session_key = ? ORDER BY created_at, rowid")
        .all(OWNER_KEY) as { chain: number }[]
    ).map((r) => r.chain);
    expect(chains).toEqual([0, 1, 2]);
    const refused = fake.requests
      .filter((r) => r.model === "main-model")
      .flatMap((r) => toolResults(r))
      .find((t) => t.includes("Not started"));
    expect(refused).toMatch(/agents\.defaults\.subagents\.max_chain is 2/);
    const sent = h.channel.sent.map((m) => m.text);
    expect(sent.some((t) => t.startsWith("Stopped a chain of background tasks"))).toBe(true);
  });

  it("max_chain 0: an announcement may start nothing, a normal turn still may", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: {}, worker: { model: "f/worker-model" }, defaults: { subagents: { max_chain: 0 } } },
    });
    reDispatchForever();
    await h.submit("start").result;
    await settle();
    expect(taskCount()).toBe(1);
    await h.submit("start again").result;
    await settle();
    expect(taskCount()).toBe(2);
  });
});
