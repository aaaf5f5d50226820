/**
 * Tool-loop detection through the real agent loop and model router against the fake OpenAI server:
 * a scripted model that polls the same URL forever. The warning must reach the model (in the tool
 * result it is sent next), critical calls must be blocked (the tool does not run), and the breaker
 * must end the turn with a message.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../../../test/fakes/openai-server.js";
import { configFromObject } from "../../config/load.js";
import { FakeClock } from "../../core/clock.js";
import { silentLogger } from "../../log/logger.js";
import { createModelRouter } from "../../models/router.js";
import type { ToolSet } from "../../tools/tool.js";
import type { AgentEvent } from "../../core/agent-events.js";
import { runAgentLoop, type LoopGuard, type LoopOutcome } from "../loop.js";
import { createLoopDetector } from "./loop-detector.js";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => fake.reset());

describe("loop detection in the agent loop", () => {
  it("warns the model at 10, blocks from 20 and ends the turn at 30", async () => {
    const config = configFromObject({
      log: { level: "silent" },
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "k" } },
        primary: "fake/m",
        max_retries: 0,
      },
    });
    const router = createModelRouter({
      config: () => config,
      logger: silentLogger(),
      clock: new FakeClock(),
    });
    let n = 0;
    fake.setHandler(() => ({
      toolCalls: [
        { id: `c${++n}`, name: "web_fetch", arguments: { url: "https://ci.example.com/build/42" } },
      ],
    }));
    let executed = 0;
    const tools: ToolSet = {
      specs: () => [{ name: "web_fetch", description: "fetch a URL", parameters: { type: "object" } }],
      execute: () => {
        executed++;
        return Promise.resolve({ content: "build 42: running" });
      },
    };
    const detector = createLoopDetector(config.agents.defaults.loop_detection);
    const guard: LoopGuard = {
      beforeCall: (c) => {
        const r = detector.beforeCall(c);
        return { verdict: r.verdict, message: r.message };
      },
      afterCall: (c, res) => detector.afterCall(c, res),
    };
    const events: AgentEvent[] = [];
    const gen = runAgentLoop({
      runId: "r1",
      model: router,
      modelRef: "fake/m",
      tools,
      messages: [{ role: "user", content: "tell me when build 42 finishes" }],
      signal: new AbortController().signal,
      maxIterations: 100,
      toolContext: {
        sessionKey: "k",
        sessionId: "s",
        agentId: "main",
        workspace: "/tmp",
        requestId: "q",
        depth: 0,
        logger: silentLogger(),
        requestApproval: () => Promise.resolve("denied"),
      },
      loopGuard: guard,
    });
    let outcome: LoopOutcome | undefined;
    for (;;) {
      const step = await gen.next();
      if (step.done) {
        outcome = step.value;
        break;
      }
      events.push(step.value);
    }

    // The tool ran 19 times: calls 20-29 were blocked, call 30 tripped the breaker.
    expect(executed).toBe(19);
    expect(fake.requests).toHaveLength(30);
    expect(outcome.finishReason).toBe("loop_breaker");
    expect(outcome.text).toContain("web_fetch was called with the same arguments 30 times");
    expect(events).toContainEqual(expect.objectContaining({ type: "notice", kind: "loop_breaker" }));

    const lastToolContent = (i: number): string => {
      const msgs = fake.requests[i]!.body!.messages!;
      const last = msgs.at(-1)!;
      expect(last.role).toBe("tool");
      return String(last.content);
    };
    // Request k (0-based) carries the result of call k. Call 9 ran clean, call 10 carried the warning.
    expect(lastToolContent(9)).toBe("build 42: running");
    expect(lastToolContent(10)).toMatch(
      /build 42: running\s+\[loop detection warning\] web_fetch has returned the same result 10 times in a row: no progress\. Wait at least 10 s/,
    );
    expect(lastToolContent(19)).toContain("[loop detection warning]");
    expect(lastToolContent(20)).toMatch(
      /^Blocked by loop detection: web_fetch returned the same result 20 times in a row/,
    );
    expect(lastToolContent(29)).toMatch(/^Blocked by loop detection/);
  });
});
