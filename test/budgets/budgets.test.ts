/**
 * Budgets through the agent host assembled as the daemon does it (createAgentHostService), with the
 * fake OpenAI server, fake prices and a fake clock: a limit stops the next turn with one notice and
 * no model call and resets at the boundary; heartbeat and cron stop too; a subagent's and a
 * compaction's spend count against the parent (a compaction's row names its turn); the warning fires
 * once; an unpriced model counts at the default price; limits hot-reload.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeStep } from "../fakes/openai-server.js";
import { FakeClock } from "../../internal/core/clock.js";
import { createHeartbeatService } from "../../internal/heartbeat/heartbeat-service.js";
import { createCronService } from "../../internal/cron/cron-service.js";
import type { AgentEvent } from "../../internal/core/agent-events.js";
import {
  createSubagentHarness,
  modelsConfig,
  OWNER_KEY,
  type SubagentHarness,
} from "../subagents/harness.js";

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

/** $100 per 1M tokens in and out: 10,000 tokens cost $1. */
const PRICING = {
  "f/main-model": { input: 100, output: 100 },
  "f/helper-model": { input: 100, output: 100 },
};
const usage = (tokens: number): Record<string, unknown> => ({
  prompt_tokens: tokens / 2,
  completion_tokens: tokens / 2,
  total_tokens: tokens,
});
const reply = (text: string, tokens: number, model = "main-model"): FakeStep => ({
  model,
  text,
  usage: usage(tokens),
});

// 2026-03-10 22:00 UTC: two hours before the daily reset.
const START = Date.UTC(2026, 2, 10, 22, 0);

async function setup(budgets: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const clock = new FakeClock(START);
  h = await createSubagentHarness(
    {
      models: { ...modelsConfig(fake.baseUrl), pricing: PRICING },
      budgets,
      agents: { main: {}, helper: { model: "f/helper-model", description: "helps" } },
      ...extra,
    },
    { clock },
  );
  return { h, clock };
}

async function turn(text: string): Promise<{ text: string; code?: string; events: AgentEvent[] }> {
  const events: AgentEvent[] = [];
  const r = await h!.submit(text, (e) => events.push(e)).result;
  return { text: r.text, ...(r.error ? { code: r.error.code } : {}), events };
}

describe("budgets", () => {
  it("a daily limit stops the next turn with one notice and no model call, and resets at midnight", async () => {
    const { clock } = await setup({ overall: { daily_usd: 1 } });
    fake.enqueue(reply("first", 12000));
    expect((await turn("hello")).text).toBe("first");
    expect(fake.requests).toHaveLength(1);

    const blocked = await turn("again");
    expect(fake.requests).toHaveLength(1); // no model call
    expect(blocked.code).toBe("BUDGET_EXCEEDED");
    expect(blocked.text).toMatch(/daily budget for overall is \$1\.00 and \$1\.20 has been spent today/);
    expect(blocked.text).toMatch(/resets 2026-03-11 00:00 \(UTC\)/);
    const errors = blocked.events.filter((e) => e.type === "error");
    expect(errors).toHaveLength(1);

    clock.advance(2 * 3600_000); // the next day
    fake.enqueue(reply("fresh day", 1000));
    expect((await turn("morning")).text).toBe("fresh day");
    expect(fake.requests).toHaveLength(2);
  });

  it("refuses a call whose projected cost would cross the limit", async () => {
    await setup({ overall: { daily_tokens: 11000 } });
    fake.enqueue(reply("first", 10000));
    await turn("hello");
    // 10,000 spent + the projected prompt and 1,024-token reply > 11,000.
    const blocked = await turn("again");
    expect(blocked.code).toBe("BUDGET_EXCEEDED");
    expect(blocked.text).toMatch(/11,000 tokens and 10,000 tokens has been spent/);
    expect(fake.requests).toHaveLength(1);
  });

  it("warns the owner once when a limit crosses warn_at", async () => {
    await setup({ overall: { daily_usd: 10 }, warn_at: 0.5, warn_target: "test:owner" });
    fake.enqueue(reply("a", 30000), reply("b", 30000), reply("c", 10000));
    await turn("one");
    expect(h!.channel.sent.filter((m) => m.text.startsWith("Budget warning"))).toHaveLength(0);
    await turn("two");
    await turn("three");
    await new Promise((r) => setImmediate(r));
    const warnings = h!.channel.sent.filter((m) => m.text.startsWith("Budget warning"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.target).toBe("owner");
    expect(warnings[0]!.text).toMatch(/60% of the daily limit for overall is used \(\$6\.00 of \$10\.00\)/);
  });

  it("counts a subagent's spend against its parent's agent and session", async () => {
    await setup({ agents: { main: { daily_usd: 2.4 } }, per_session: { daily_usd: 100 } });
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "helper", message: "dig" } }],
        usage: usage(2000),
      },
      reply("dug", 18000, "helper-model"),
      reply("done", 2000),
    );
    expect((await turn("delegate it")).text).toBe("done");
    const rows = h!.core.db
      .prepare<[], { agent_id: string; payer_agent: string; payer_session: string; channel: string }>(
        "SELECT agent_id, payer_agent, payer_session, channel FROM usage ORDER BY id",
      )
      .all();
    expect(rows.map((r) => r.agent_id)).toEqual(["main", "helper", "main"]);
    expect(new Set(rows.map((r) => r.payer_agent))).toEqual(new Set(["main"]));
    expect(new Set(rows.map((r) => r.payer_session))).toEqual(new Set([OWNER_KEY]));
    expect(new Set(rows.map((r) => r.channel))).toEqual(new Set(["test"]));
    // $0.2 + $1.8 (the helper) + $0.2 = $2.2 for agent "main" and for the owner's session.
    const status = h!.agents.budgets.guard.status();
    expect(status.find((s) => s.id === "agent:main:daily_usd")?.spent).toBeCloseTo(2.2, 6);
    expect(status.find((s) => s.id === `session:${OWNER_KEY}:daily_usd`)?.spent).toBeCloseTo(2.2, 6);
    // $2.2 + the projected next call > $2.4.
    const blocked = await turn("more");
    expect(blocked.code).toBe("BUDGET_EXCEEDED");
    expect(blocked.text).toMatch(/daily budget for agent "main" is \$2\.40 and \$2\.20/);
  });

  it("counts a model without a price at budgets.default_price", async () => {
    await setup(
      { overall: { daily_usd: 1 }, default_price: { input: 50, output: 50 } },
      {
        models: {
          ...modelsConfig(fake.baseUrl),
          primary: "f/unpriced",
          pricing: {},
        },
      },
    );
    fake.enqueue({ model: "unpriced", text: "cheap?", usage: usage(20000) });
    await turn("hello");
    const row = h!.core.db
      .prepare<[], { cost: number | null; cost_source: string }>("SELECT cost, cost_source FROM usage")
      .get();
    // The row holds the figure every surface shows, and says it is at the default price.
    expect(row).toMatchObject({ cost: 1, cost_source: "default" });
    const status = h!.agents.budgets.guard.status();
    expect(status[0]).toMatchObject({ id: "overall:daily_usd", spent: 1, limit: 1 });
    expect((await turn("again")).code).toBe("BUDGET_EXCEEDED");
  });

  it("heartbeat and cron turns stop at the limit like chat turns", async () => {
    const { h } = await setup(
      { channels: { heartbeat: { daily_usd: 1 }, cron: { daily_usd: 1 } } },
      {
        heartbeat: { every: "30m", target: "test:owner", model: "f/main-model" },
        cron: {
          jobs: [
            { id: "digest", every: "1h", message: "digest", deliver: "test:owner", model: "f/main-model" },
          ],
        },
      },
    );
    writeFileSync(join(h.core.ctx.config().workspace, "HEARTBEAT.md"), "- check the inbox\n");
    const heartbeat = createHeartbeatService(h.core.ctx, { host: h.agents.host, outbox: h.channels });
    const cron = createCronService(h.core.ctx, { host: h.agents.host, outbox: h.channels });
    await cron.start();
    fake.enqueue(reply("HEARTBEAT_OK", 15000), reply("digest one", 15000));
    expect((await heartbeat.runNow()).status).not.toBe("error");
    expect((await cron.runNow("digest")).status).toBe("ok");
    expect(fake.requests).toHaveLength(2);

    const hb = await heartbeat.runNow();
    expect(hb.status).toBe("error");
    expect(hb.reason).toMatch(/daily budget for channel heartbeat/);
    const run = await cron.runNow("digest");
    expect(run.status).toBe("error");
    expect(run.error).toMatch(/daily budget for channel cron/);
    expect(fake.requests).toHaveLength(2); // neither called the model
    // The owner's chat is unaffected by the background limits.
    fake.enqueue(reply("still here", 1000));
    expect((await turn("hi")).text).toBe("still here");
    await heartbeat.stop();
    await cron.stop();
  });

  it("counts compaction summaries against the turn that needed them", async () => {
    await setup(
      { per_session: { daily_usd: 100 } },
      {
        models: {
          ...modelsConfig(fake.baseUrl),
          providers: {
            f: {
              base_url: fake.baseUrl,
              api_key: "sk-test",
              models: { "main-model": { context_window: 16_384 } },
            },
          },
          pricing: PRICING,
        },
        agents: {
          main: {},
          defaults: { compact: { keep_last_n: 2, reserve_tokens: 1024, memory_flush: false } },
        },
      },
    );
    let summaries = 0;
    fake.setHandler((req) => {
      const system = req.body?.messages?.[0]?.content;
      if (typeof system === "string" && /^You (compress|merge)/.test(system)) {
        summaries++;
        return { text: "- summary", usage: usage(1000) };
      }
      return { text: "ok", usage: usage(1000) };
    });
    for (let i = 0; i < 6 && summaries === 0; i++) await turn(`${i} ${"lorem ipsum ".repeat(1000)}`);
    expect(summaries).toBeGreaterThan(0);
    const rows = h!.core.db
      .prepare<[], { payer_session: string; channel: string; payer_agent: string; request_id: string }>(
        "SELECT payer_session, channel, payer_agent, request_id FROM usage WHERE kind = 'compaction'",
      )
      .all();
    expect(rows).toHaveLength(summaries);
    const { request_id: turnId, ...payer } = rows[0]!;
    expect(payer).toEqual({ payer_session: OWNER_KEY, channel: "test", payer_agent: "main" });
    // The summary names the turn that needed it: the last turn's own call has the same request id.
    const lastTurn = h!.core.db
      .prepare<[], { request_id: string }>(
        "SELECT request_id FROM usage WHERE kind = 'turn' ORDER BY id DESC",
      )
      .get();
    expect(turnId).toBe(lastTurn?.request_id);
  });

  it("a raised limit applies at once (hot reload)", async () => {
    await setup({ overall: { daily_usd: 1 } });
    fake.enqueue(reply("first", 15000));
    await turn("hello");
    expect((await turn("blocked")).code).toBe("BUDGET_EXCEEDED");
    h!.core.setConfig({
      models: { ...modelsConfig(fake.baseUrl), pricing: PRICING },
      budgets: { overall: { daily_usd: 5 } },
      agents: { main: {} },
    });
    fake.enqueue(reply("back", 1000));
    expect((await turn("now?")).text).toBe("back");
  });
});
