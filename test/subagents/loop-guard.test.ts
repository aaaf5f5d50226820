/**
 * The tool-loop guard as the daemon wires it (the host's default guard built from
 * `agents.defaults.loop_detection`, no guard injected), through real turns of the agent host with the
 * fake OpenAI server and the real tools: for each detector, the warning the model sees in its next
 * request, the blocked call, and the circuit breaker ending the turn. Also the dispatch depth guard.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeToolCall } from "../fakes/openai-server.js";
import {
  createSubagentHarness,
  forModel,
  modelsConfig,
  toolResults,
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

/** Small thresholds so each detector fires within a few calls. */
const loopDetection = {
  history_size: 12,
  generic_repeat: { warning: 3, critical: 5 },
  known_poll: { warning: 3, critical: 5 },
  ping_pong: { warning: 4, critical: 6 },
  circuit_breaker: { limit: 8 },
  poll_tools: ["list_dir"],
};

async function setup(agents: Record<string, unknown> = {}, subagents: object = {}): Promise<SubagentHarness> {
  const harness = await createSubagentHarness({
    models: modelsConfig(fake.baseUrl),
    agents: { defaults: { loop_detection: loopDetection, subagents }, main: {}, ...agents },
  });
  writeFileSync(join(harness.core.ctx.config().workspace, "a.txt"), "alpha\n");
  writeFileSync(join(harness.core.ctx.config().workspace, "b.txt"), "beta\n");
  return harness;
}

/** The model calls `calls[i]` on its i-th request, then answers "gave up". */
function script(calls: FakeToolCall[]): void {
  let n = 0;
  fake.setHandler((req) => {
    if (req.model !== "main-model") return undefined;
    const c = calls[n++];
    return c ? { toolCalls: [c] } : { text: "gave up" };
  });
}

/** What the model was shown as the result of its k-th call (1-based): the tool message of request k. */
function shown(k: number): string {
  const req = forModel(fake.requests, "main-model")[k];
  return toolResults(req).at(-1) ?? "";
}

const read = (path: string): FakeToolCall => ({ name: "read_file", arguments: { path } });

describe("the host's default loop guard in real turns", () => {
  it("generic_repeat: warns the model at 3, blocks from 5, and the breaker ends the turn at 8", async () => {
    h = await setup();
    script(Array.from({ length: 10 }, () => read("a.txt")));
    const r = await h.submit("read a.txt until it changes").result;
    expect(shown(2)).not.toContain("[loop detection warning]");
    expect(shown(3)).toMatch(
      /alpha[\s\S]*\[loop detection warning\] You have called read_file with identical arguments 3 times in this turn/,
    );
    expect(shown(5)).toMatch(
      /^Blocked by loop detection: read_file was called with identical arguments 5 times/,
    );
    expect(r.finishReason).toBe("loop_breaker");
    expect(r.text).toContain("read_file was called with the same arguments 8 times");
    // The breaker's call was the last: the model was not asked again.
    expect(forModel(fake.requests, "main-model")).toHaveLength(8);
  });

  it("known_poll: a poll tool whose result never changes is warned at 3 and blocked at 5", async () => {
    h = await setup();
    script(Array.from({ length: 5 }, () => ({ name: "list_dir", arguments: { path: "." } })));
    const r = await h.submit("tell me when a new file appears").result;
    expect(shown(2)).not.toContain("[loop detection warning]");
    expect(shown(3)).toMatch(
      /a\.txt[\s\S]*\[loop detection warning\] list_dir has returned the same result 3 times in a row: no progress\./,
    );
    expect(shown(5)).toMatch(
      /^Blocked by loop detection: list_dir returned the same result 5 times in a row/,
    );
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe("gave up");
  });

  it("ping_pong: alternating two calls with unchanged results is warned at 4 and blocked at 6", async () => {
    h = await setup();
    script([read("a.txt"), read("b.txt"), read("a.txt"), read("b.txt"), read("a.txt"), read("b.txt")]);
    const r = await h.submit("compare a and b").result;
    expect(shown(3)).not.toContain("alternating");
    expect(shown(4)).toMatch(
      /beta[\s\S]*\[loop detection warning\] You have been alternating between two different read_file calls for 4 calls/,
    );
    expect(shown(6)).toMatch(
      /^Blocked by loop detection: .*Alternating between two different read_file calls for 6 calls/,
    );
    expect(r.text).toBe("gave up");
  });

  it("loop_detection.enabled: false turns the guard off", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { defaults: { loop_detection: { ...loopDetection, enabled: false } }, main: {} },
    });
    writeFileSync(join(h.core.ctx.config().workspace, "a.txt"), "alpha\n");
    script(Array.from({ length: 9 }, () => read("a.txt")));
    const r = await h.submit("read a.txt").result;
    expect(r.text).toBe("gave up");
    for (let k = 1; k <= 9; k++) expect(shown(k)).toBe("alpha\n");
  });
});

describe("the dispatch depth guard", () => {
  it("a dispatch past subagents.max_depth is a recursion_depth_exceeded result, not a run", async () => {
    h = await setup({ helper: { model: "f/helper-model", tools: ["dispatch"] } }, { max_depth: 1 });
    // main dispatches to helper (depth 1); helper's own dispatch would be depth 2.
    fake.setHandler((req) => {
      if (req.model === "helper-model")
        return toolResults(req).length === 0
          ? {
              toolCalls: [
                { name: "dispatch", arguments: { tasks: [{ id: "deeper", agent: "main", message: "x" }] } },
              ],
            }
          : { text: `helper saw: ${toolResults(req)[0]}` };
      if (req.model === "main-model")
        return toolResults(req).length === 0
          ? {
              toolCalls: [
                { name: "dispatch", arguments: { tasks: [{ id: "t1", agent: "helper", message: "go" }] } },
              ],
            }
          : { text: "done" };
      return undefined;
    });
    const r = await h.submit("start").result;
    expect(r.text).toBe("done");
    const helper = forModel(fake.requests, "helper-model");
    expect(helper).toHaveLength(2);
    expect(toolResults(helper[1])[0]).toBe(
      "recursion_depth_exceeded: dispatch at depth 2 exceeds the limit of 1",
    );
    // main never ran a second time at depth 2.
    expect(forModel(fake.requests, "main-model")).toHaveLength(2);
    expect(toolResults(forModel(fake.requests, "main-model")[1])[0]).toContain(
      "helper saw: recursion_depth_exceeded",
    );
  });
});
