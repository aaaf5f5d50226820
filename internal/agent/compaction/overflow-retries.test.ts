/**
 * Context overflow through the real agent host and loop (fake OpenAI server on 127.0.0.1, real SQLite):
 * the session is compacted and the call retried at most 3 times, each retry more aggressive; a model
 * that still overflows ends the turn with one clear error that says how many compactions were made.
 */
import { describe, expect, it } from "vitest";
import { contextOverflowStep } from "../../../test/fakes/openai-server.js";
import type { TestCore } from "../../../test/helpers/core.js";
import { useFakeModelSuite } from "../../../test/helpers/fake-model-suite.js";
import { resolveContextWindow } from "../../models/context-window.js";
import { createModelRouter } from "../../models/router.js";
import type { AgentEvent } from "../../core/agent-events.js";
import { createAgentHost, type AgentHostImpl } from "../host.js";
import { createHostCompactor } from "./host-compactor.js";
import { lineage } from "./lineage.js";

const KEY = "agent:main:gateway:overflow";
const suite = useFakeModelSuite();
let core: TestCore | undefined;

const isSummaryRequest = (msgs: { role: string; content?: unknown }[]): boolean => {
  const sys = typeof msgs[0]?.content === "string" ? msgs[0].content : "";
  return sys.startsWith("You compress") || sys.startsWith("You merge");
};

function setup(): AgentHostImpl {
  core = suite.createCore({
    models: {
      providers: {
        f: { base_url: suite.fake.baseUrl, api_key: "sk-test", models: { m: { context_window: 32_768 } } },
      },
      primary: "f/m",
      max_retries: 0,
    },
    agents: { defaults: { compact: { memory_flush: false } } },
  });
  const ctx = core.ctx;
  const router = createModelRouter({ config: ctx.config, logger: ctx.logger, clock: ctx.clock });
  const compactor = createHostCompactor({
    db: ctx.db,
    config: ctx.config,
    model: router,
    contextWindow: (ref, agentId) => resolveContextWindow(ctx.config(), ref ?? "f/m", agentId),
  });
  return createAgentHost({ ctx, model: router, compactor });
}

async function seed(host: AgentHostImpl, turns: number): Promise<void> {
  suite.fake.setHandler((req) =>
    isSummaryRequest(req.body?.messages ?? [])
      ? { text: "- The user asked about order ORD-7731." }
      : { text: `ok ${req.body?.messages?.length ?? 0}` },
  );
  for (let i = 0; i < turns; i++)
    await host.submit({ channel: "gateway", sessionKey: KEY, text: `question ${i} about ORD-7731` }).result;
  suite.fake.reset();
}

describe("context overflow in the agent loop", () => {
  it("compacts and retries at most 3 times, then ends with one clear error", async () => {
    const host = setup();
    await seed(host, 15);
    const first = host.sessions.head(KEY)!.id;
    let mainCalls = 0;
    suite.fake.setHandler((req) => {
      if (isSummaryRequest(req.body?.messages ?? [])) return { text: "- Order ORD-7731 was discussed." };
      mainCalls++;
      return contextOverflowStep();
    });
    const events: AgentEvent[] = [];
    const r = await host.submit({ channel: "gateway", sessionKey: KEY, text: "and now?" }, (e) =>
      events.push(e),
    ).result;

    expect(mainCalls).toBe(4); // the first call and 3 retries, never a 5th
    expect(r.finishReason).toBe("error");
    expect(r.error?.code).toBe("MODEL_CONTEXT_OVERFLOW");
    expect(r.error?.message).toBe(
      "The conversation is still too long for the model after 3 compactions. Use /new to start fresh.",
    );
    const notices = events.filter((e) => e.type === "notice" && e.kind === "compaction");
    expect(notices).toHaveLength(3);
    expect(events.filter((e) => e.type === "error")).toHaveLength(1);
    // Each retry compacted again: three successors, the original still readable.
    const l = lineage(core!.db, first)!;
    expect(l.forward).toHaveLength(3);
    expect(l.summaries).toHaveLength(3);
    expect(host.sessions.messages(first).filter((m) => m.role === "user").length).toBe(16);
  });

  it("a retry that succeeds answers once after one compaction", async () => {
    const host = setup();
    await seed(host, 15);
    let mainCalls = 0;
    suite.fake.setHandler((req) => {
      if (isSummaryRequest(req.body?.messages ?? [])) return { text: "- Order ORD-7731 was discussed." };
      mainCalls++;
      return mainCalls === 1 ? contextOverflowStep() : { text: "Here you go." };
    });
    const events: AgentEvent[] = [];
    const r = await host.submit({ channel: "gateway", sessionKey: KEY, text: "and now?" }, (e) =>
      events.push(e),
    ).result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe("Here you go.");
    expect(mainCalls).toBe(2);
    const notices = events.flatMap((e) => (e.type === "notice" ? [e.kind] : []));
    expect(notices).toEqual(["compaction", "overflow_retry"]);
  });

  it("the third, most aggressive retry still sends the user's question verbatim", async () => {
    const host = setup();
    await seed(host, 15);
    let mainCalls = 0;
    suite.fake.setHandler((req) => {
      if (isSummaryRequest(req.body?.messages ?? [])) return { text: "- Order ORD-7731 was discussed." };
      mainCalls++;
      return mainCalls <= 3 ? contextOverflowStep() : { text: "Answered after 3 compactions." };
    });
    const r = await host.submit({ channel: "gateway", sessionKey: KEY, text: "status of ORD-7731?" }).result;
    expect(r.text).toBe("Answered after 3 compactions.");
    const last = suite.fake.requests.at(-1)!.body!.messages!;
    expect(last.at(-1)).toMatchObject({ role: "user", content: "status of ORD-7731?" });
    expect(String(last[1]!.content)).toMatch(/^\[Summary of earlier conversation\]/);
  });

  it("with nothing to compact, says the conversation is too long without claiming a compaction", async () => {
    const host = setup();
    suite.fake.setHandler(() => contextOverflowStep());
    const r = await host.submit({ channel: "gateway", sessionKey: KEY, text: "hello" }).result;
    expect(r.finishReason).toBe("error");
    expect(r.error?.message).toBe("The conversation is too long for the model. Use /compact or /new.");
    expect(suite.fake.requests).toHaveLength(1);
  });
});
