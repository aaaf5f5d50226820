/**
 * A restart with a running async task: a second host (a new task manager on the same db file) marks
 * the task `interrupted` and tells the user through the originating session and channel.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import {
  createSubagentHarness,
  forModel,
  modelsConfig,
  OWNER_KEY,
  systemMessages,
  toolResults,
  waitFor,
  type SubagentHarness,
} from "./harness.js";

let fake: FakeOpenAI;
const open: SubagentHarness[] = [];
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  for (const x of open.splice(0).reverse()) {
    await x.agents.host.drain(0);
    await x.agents.tasks.whenIdle();
    await x.close();
  }
  fake.reset();
});

const config = (): Record<string, unknown> => ({
  models: modelsConfig(fake.baseUrl),
  agents: { main: {}, researcher: { model: "f/researcher-model" } },
});

async function startTask(): Promise<{ h1: SubagentHarness; id: string }> {
  const h1 = await createSubagentHarness(config());
  open.push(h1);
  fake.enqueue(
    {
      model: "main-model",
      toolCalls: [
        { name: "delegate", arguments: { agent: "researcher", message: "a long survey", mode: "async" } },
      ],
    },
    { model: "main-model", text: "Started the survey." },
    // The subagent never answers: the task is still running when the daemon goes away.
    { model: "researcher-model", hang: true },
  );
  await h1.submit("survey in the background").result;
  const started = toolResults(forModel(fake.requests, "main-model")[1])[0] ?? "";
  const id = /background task (\S+)/.exec(started)?.[1] ?? "";
  await waitFor(() => forModel(fake.requests, "researcher-model").length === 1, "subagent request");
  expect(h1.agents.tasks.status(id)?.status).toBe("running");
  return { h1, id };
}

async function restartAndCheck(dir: string, id: string): Promise<void> {
  fake.enqueue({ model: "main-model", text: "Sorry: the survey was interrupted by a restart." });
  const h2 = await createSubagentHarness(config(), { dir });
  open.push(h2);
  await h2.channel.waitFor(1);
  await h2.agents.tasks.whenIdle();
  expect(h2.channel.sent.map((m) => `${m.target}|${m.text}`)).toEqual([
    "owner|Sorry: the survey was interrupted by a restart.",
  ]);
  expect(h2.agents.tasks.status(id)).toMatchObject({ status: "interrupted", announce_status: "delivered" });
  const announceReq = forModel(fake.requests, "main-model").at(-1);
  expect(
    systemMessages(announceReq).some((s) =>
      s.startsWith(`[system event] Background task ${id} (agent researcher) ended with status interrupted`),
    ),
  ).toBe(true);
  const session = h2.agents.host.sessions.head(OWNER_KEY);
  const roles = h2.agents.host.sessions.messages(session?.id ?? "").map((m) => m.role);
  expect(roles.filter((r) => r === "event")).toHaveLength(1);
  expect(roles.filter((r) => r === "user")).toHaveLength(1);
}

describe("restart with a running async task", () => {
  it("after a crash (row left running) the next start marks it interrupted and tells the user", async () => {
    const { h1, id } = await startTask();
    // No drain, no stop: a second process opens the same db file, as after kill -9.
    await restartAndCheck(h1.core.dir, id);
    expect(h1.channel.sent).toEqual([]);
  });

  it("after a graceful stop (drain aborts the task) it is announced by the next start, not during shutdown", async () => {
    const { h1, id } = await startTask();
    await h1.agents.host.drain(0);
    await h1.agents.tasks.whenIdle();
    expect(h1.agents.tasks.status(id)).toMatchObject({ status: "interrupted", announce_status: null });
    expect(h1.channel.sent).toEqual([]);
    await h1.stop();
    await restartAndCheck(h1.core.dir, id);
  });
});
