/**
 * The detours of a turn in its trace, through the real agent host, router and compactor (fake
 * OpenAI server on 127.0.0.1, real SQLite): a model attempt that failed upstream and was retried is a
 * `retry` span before the model call that answered; a fallback names the model tried next; a
 * compaction after a context overflow is a `compaction` span; a turn without detours has neither.
 */
import { describe, expect, it } from "vitest";
import { contextOverflowStep } from "../../test/fakes/openai-server.js";
import { useFakeModelSuite } from "../../test/helpers/fake-model-suite.js";
import { resolveContextWindow } from "../models/context-window.js";
import { createModelRouter } from "../models/router.js";
import { createHostCompactor } from "./compaction/host-compactor.js";
import { createAgentHost, type AgentHostImpl } from "./host.js";
import { buildTraceReport, formatTraceReport } from "./trace-report.js";

const suite = useFakeModelSuite();

function setup(models: Record<string, unknown>): AgentHostImpl {
  const core = suite.createCore({
    models,
    agents: { defaults: { compact: { memory_flush: false } } },
  });
  const ctx = core.ctx;
  // Backoff of 1 ms on the system clock: the retry happens, and the test does not wait for it.
  const router = createModelRouter({
    config: ctx.config,
    logger: ctx.logger,
    clock: ctx.clock,
    backoff: { baseMs: 1, maxMs: 1 },
  });
  const compactor = createHostCompactor({
    db: ctx.db,
    config: ctx.config,
    model: router,
    contextWindow: (ref, agentId) => resolveContextWindow(ctx.config(), ref ?? "f/m", agentId),
  });
  return createAgentHost({ ctx, model: router, compactor });
}

const provider = () => ({
  f: { base_url: suite.fake.baseUrl, api_key: "sk-test", models: { m: { context_window: 32_768 } } },
});

describe("a turn's detours in its trace", () => {
  it("a model attempt that failed upstream and was retried is a retry span with its cause", async () => {
    const host = setup({ providers: provider(), primary: "f/m", max_retries: 2 });
    suite.fake.enqueue(
      { error: { status: 502, message: "upstream hiccup (test)" } },
      { text: "answered on the second try" },
    );
    const r = await host.submit({ channel: "gateway", sessionKey: "agent:main:gateway:retry", text: "hi" })
      .result;
    expect(r.text).toBe("answered on the second try");
    const rows = host.traces.tree(r.requestId);
    const report = buildTraceReport(rows, r.requestId, host.deps.ctx.config())!;
    const retry = report.calls.filter((c) => c.kind === "retry");
    expect(retry).toHaveLength(1);
    expect(retry[0]!.name).toBe("f/m");
    expect(retry[0]!.detail).toMatchObject({ model: "f/m", attempt: 1, next: "retry", wait_ms: 1 });
    expect(String(retry[0]!.detail?.message)).toMatch(/upstream hiccup/);
    expect(retry[0]!.ended_at).not.toBeNull();
    expect(retry[0]!.ended_at! - retry[0]!.started_at).toBeGreaterThanOrEqual(0);
    // No upstream URL in what API clients read back (as a failed turn's stored cause).
    expect(String(retry[0]!.detail?.message)).not.toMatch(/https?:\/\//);
    // One model call answered; the retry is on the same axis, not counted as a model call, and the
    // answering call's bar starts where the retry's ends (ms rounding aside), not over it.
    expect(report.totals.model_calls).toBe(1);
    const model = report.calls.find((c) => c.kind === "model")!;
    expect(model.started_at).toBeGreaterThanOrEqual(retry[0]!.ended_at! - 2);
    // `familiar trace` prints it with its cause and what came next.
    expect(formatTraceReport(report)).toMatch(
      /retry f\/m MODEL_\w+: .*upstream hiccup.* -> retry after 1 ms/,
    );
    expect(report.calls.some((c) => c.kind === "compaction")).toBe(false);
  });

  it("a fallback names the model tried next", async () => {
    const host = setup({
      providers: provider(),
      primary: "f/m",
      fallbacks: ["f/other"],
      max_retries: 0,
    });
    suite.fake.enqueue(
      { error: { status: 503, message: "primary down (test)" } },
      { text: "the fallback answered" },
    );
    const r = await host.submit({ channel: "gateway", sessionKey: "agent:main:gateway:fb", text: "hi" })
      .result;
    expect(r.text).toBe("the fallback answered");
    const report = buildTraceReport(host.traces.tree(r.requestId), r.requestId, host.deps.ctx.config())!;
    const retry = report.calls.find((c) => c.kind === "retry");
    expect(retry?.detail).toMatchObject({ model: "f/m", next: "fallback", fallback: "f/other" });
  });

  it("a compaction after a context overflow is a compaction span before the call that answered", async () => {
    const host = setup({ providers: provider(), primary: "f/m", max_retries: 0 });
    const key = "agent:main:gateway:overflow-span";
    const isSummary = (msgs: { role: string; content?: unknown }[]): boolean => {
      const sys = typeof msgs[0]?.content === "string" ? msgs[0].content : "";
      return sys.startsWith("You compress") || sys.startsWith("You merge");
    };
    suite.fake.setHandler((req) =>
      isSummary(req.body?.messages ?? []) ? { text: "- The user asked about ORD-7731." } : { text: "ok" },
    );
    for (let i = 0; i < 15; i++)
      await host.submit({ channel: "gateway", sessionKey: key, text: `question ${i} about ORD-7731` }).result;
    suite.fake.reset();
    let overflowed = false;
    suite.fake.setHandler((req) => {
      if (isSummary(req.body?.messages ?? [])) return { text: "- Order ORD-7731 was discussed." };
      if (!overflowed) {
        overflowed = true;
        return contextOverflowStep();
      }
      return { text: "answered after compaction" };
    });
    const r = await host.submit({ channel: "gateway", sessionKey: key, text: "and now?" }).result;
    expect(r.text).toBe("answered after compaction");
    const report = buildTraceReport(host.traces.tree(r.requestId), r.requestId, host.deps.ctx.config())!;
    const comp = report.calls.filter((c) => c.kind === "compaction");
    expect(comp).toHaveLength(1);
    expect(comp[0]!.detail).toMatchObject({ trigger: "overflow" });
    expect(Number(comp[0]!.detail?.messages_before)).toBeGreaterThan(Number(comp[0]!.detail?.messages_after));
    const model = report.calls.find((c) => c.kind === "model")!;
    expect(model.overflow_retries).toBe(1);
    expect(comp[0]!.started_at).toBeLessThanOrEqual(model.ended_at!);
    expect(formatTraceReport(report)).toMatch(/compaction after a context overflow \d+ -> \d+ messages/);
  });
});
