/**
 * The ledger against the provider's bill (issue 48): a day of chat with a tool loop and a delegated
 * subagent, a heartbeat and a cron run, through the agent host as the daemon assembles it, against the
 * fake provider billing each model in a different shape (its own reported cost; counts with cached
 * input and reasoning; nothing at all). The ledger must equal the fake's bill within 0.5% in total and
 * per model, `reconcile` on the fake's own exports must show no difference, and a deliberately
 * mispriced model must show its difference with the call that explains it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { FakeBilling } from "../fakes/fake-billing.js";
import { FakeClock } from "../../internal/core/clock.js";
import { createHeartbeatService } from "../../internal/heartbeat/heartbeat-service.js";
import { createCronService } from "../../internal/cron/cron-service.js";
import { parseExport } from "../../internal/agent/usage/provider-export.js";
import { reconcile } from "../../internal/agent/usage/reconcile.js";
import { createSubagentHarness, modelsConfig, type SubagentHarness } from "../subagents/harness.js";

const START = Date.UTC(2026, 2, 10, 9, 0);
let fake: FakeOpenAI;
let billing: FakeBilling;
let clock: FakeClock;
let h: SubagentHarness | undefined;

beforeAll(async () => {
  clock = new FakeClock(START);
  billing = new FakeBilling(
    {
      // Counts with cache and reasoning, priced by the owner's models.pricing.
      "main-model": { shape: "tokens", price: { input: 2, output: 8, cache_read: 0.5 } },
      // The provider's own figure (OpenRouter's usage.cost): no price configured at all.
      "helper-model": { shape: "reported", price: { input: 3, output: 12 } },
      // Nothing reported: estimated from the text, priced by models.pricing.
      "quiet-model": { shape: "nothing", price: { input: 1, output: 2 } },
      // Deliberately mispriced in the config below (the provider bills 3x).
      "odd-model": { shape: "tokens", price: { input: 6, output: 6 } },
    },
    () => clock.now(),
  );
  fake = await startFakeOpenAI({ billing });
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  await h?.agents.tasks.whenIdle();
  await h?.close();
  h = undefined;
});

const tokens = (prompt: number, completion: number, cached = 0, reasoning = 0): Record<string, unknown> => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: { cached_tokens: cached },
  completion_tokens_details: { reasoning_tokens: reasoning },
});

describe("the ledger against the provider's bill", () => {
  it("equals the bill per model, reconciles with no difference, and names a mispriced model's calls", async () => {
    h = await createSubagentHarness(
      {
        models: {
          ...modelsConfig(fake.baseUrl),
          pricing: {
            "f/main-model": { input: 2, output: 8, cache_read: 0.5 },
            "f/quiet-model": { input: 1, output: 2 },
            "f/odd-model": { input: 2, output: 2 },
          },
        },
        agents: { main: {}, helper: { model: "f/helper-model", description: "helps" } },
        heartbeat: { every: "30m", target: "test:owner", model: "f/quiet-model" },
        cron: {
          jobs: [
            { id: "digest", every: "1h", message: "digest", deliver: "test:owner", model: "f/quiet-model" },
            { id: "odd", every: "1h", message: "odd one", deliver: "test:owner", model: "f/odd-model" },
          ],
        },
      },
      { clock },
    );
    writeFileSync(join(h.core.ctx.config().workspace, "HEARTBEAT.md"), "- check the inbox\n");

    // A chat turn: a tool call delegating to the helper (a subagent), then the answer (a tool loop).
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "helper", message: "dig" } }],
        usage: tokens(12_000, 900, 8_000, 400),
      },
      { model: "helper-model", text: "dug it up", usage: tokens(3_000, 700) },
      { model: "main-model", text: "done", usage: tokens(14_000, 300, 12_000, 120) },
    );
    expect((await h.submit("delegate it").result).text).toBe("done");

    // A heartbeat and a cron run on the quiet model, which reports nothing.
    const heartbeat = createHeartbeatService(h.core.ctx, { host: h.agents.host, outbox: h.channels });
    const cron = createCronService(h.core.ctx, { host: h.agents.host, outbox: h.channels });
    await cron.start();
    fake.enqueue({ model: "quiet-model", text: "HEARTBEAT_OK", usage: false });
    expect((await heartbeat.runNow()).status).not.toBe("error");
    fake.enqueue({ model: "quiet-model", text: "the digest of the day, three lines long", usage: false });
    expect((await cron.runNow("digest")).status).toBe("ok");

    const db = h.core.db;
    const ledger = (model?: string): number =>
      db
        .prepare<[string | null, string | null], { usd: number | null }>(
          "SELECT SUM(cost) AS usd FROM usage WHERE (? IS NULL OR model = ?)",
        )
        .get(model ?? null, model ?? null)?.usd ?? 0;
    const within = (a: number, b: number): void => expect(Math.abs(a - b)).toBeLessThanOrEqual(0.005 * b);
    for (const m of ["main-model", "helper-model", "quiet-model"]) within(ledger(m), billing.total(m));
    within(ledger(), billing.total());

    const rows = db
      .prepare<[], { kind: string; cost_source: string; model: string; job_id: string | null }>(
        "SELECT kind, cost_source, model, job_id FROM usage ORDER BY id",
      )
      .all();
    expect(rows.map((r) => `${r.kind}:${r.cost_source}`)).toEqual([
      "turn:priced",
      "subagent:reported",
      "tool_loop:priced",
      "heartbeat:estimated",
      "cron:estimated",
    ]);
    expect(rows[4]!.job_id).toBe("digest");

    // The fake's own exports show no difference.
    const cfg = h.core.ctx.config();
    const viaRouter = reconcile(db, cfg, parseExport(billing.openRouterCsv()), "f");
    expect(viaRouter.rows.length).toBeGreaterThan(0);
    expect(viaRouter.rows.filter((r) => !r.matches)).toEqual([]);
    const viaOpenAi = reconcile(db, cfg, parseExport(billing.openAiCostsCsv()), "f");
    expect(viaOpenAi.rows.filter((r) => !r.matches)).toEqual([]);

    // A mispriced model: the provider bills 3x the configured price; the difference names the call.
    fake.enqueue({ model: "odd-model", text: "odd", usage: tokens(10_000, 1_000) });
    expect((await cron.runNow("odd")).status).toBe("ok");
    const after = reconcile(db, cfg, parseExport(billing.openAiCostsCsv()), "f");
    const odd = after.rows.filter((r) => !r.matches);
    expect(odd.map((r) => r.model)).toEqual(["odd-model"]);
    expect(odd[0]!.difference).toBeCloseTo(billing.total("odd-model") - ledger("odd-model"), 8);
    expect(odd[0]!.explain.join(" ")).toMatch(/3\.00x .*price of odd-model is likely wrong/);
    expect(odd[0]!.suspects.map((c) => `${c.kind}:${c.jobId}`)).toEqual(["cron:odd"]);
    const perCall = reconcile(db, cfg, parseExport(billing.openRouterCsv()), "f");
    expect(perCall.rows.filter((r) => !r.matches)[0]!.explain.join(" ")).toMatch(
      /the provider billed \$0\.066/,
    );
    await heartbeat.stop();
    await cron.stop();
  });
});
