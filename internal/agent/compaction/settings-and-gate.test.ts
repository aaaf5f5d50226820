import { describe, expect, it } from "vitest";
import { configSchema } from "../../config/schema.js";
import { resolveCompactionSettings, type SessionCompactionColumns } from "./compaction-settings.js";
import { MEMORY_FLUSH_SILENT_REPLY, memoryFlushPrompt } from "./memory-flush.js";
import { compactionBudget, shouldCompact } from "./should-compact.js";

const config = configSchema.parse({
  agents: {
    defaults: { compact: { keep_last_n: 12, summary_model: "local/small" } },
    coder: { compact: { strategy: "manual", observation_mask: false } },
  },
});
const none: SessionCompactionColumns = {
  compact_strategy: null,
  compact_keep_last_n: null,
  compact_observation_mask: null,
  compact_summary_model: null,
};

describe("resolveCompactionSettings", () => {
  it.each([
    {
      name: "config defaults",
      agent: "main",
      row: none,
      want: { strategy: "auto", keepLastN: 12, observationMask: true, summaryModel: "local/small" },
    },
    {
      name: "agent over defaults",
      agent: "coder",
      row: none,
      want: { strategy: "manual", keepLastN: 12, observationMask: false },
    },
    {
      name: "session row over agent",
      agent: "coder",
      row: {
        compact_strategy: "off",
        compact_keep_last_n: 0,
        compact_observation_mask: 1,
        compact_summary_model: "openai/gpt-4o-mini",
      },
      want: { strategy: "off", keepLastN: 0, observationMask: true, summaryModel: "openai/gpt-4o-mini" },
    },
    {
      name: "invalid row values are ignored",
      agent: "main",
      row: {
        compact_strategy: "sometimes",
        compact_keep_last_n: 500,
        compact_observation_mask: 7,
        compact_summary_model: "no-slash",
      },
      want: { strategy: "auto", keepLastN: 12, observationMask: true, summaryModel: "local/small" },
    },
  ])("$name", ({ agent, row, want }) => {
    expect(resolveCompactionSettings(config, agent, row)).toMatchObject(want);
  });

  it("takes the summary model from agents.defaults.compaction.model, its other name", () => {
    const cfg = configSchema.parse({ agents: { defaults: { compaction: { model: "local/cheap" } } } });
    expect(resolveCompactionSettings(cfg, "main").summaryModel).toBe("local/cheap");
    // An agent's own summary model still wins over the defaults.
    const withAgent = configSchema.parse({
      agents: {
        defaults: { compaction: { model: "local/cheap" } },
        coder: { compact: { summary_model: "local/coder-small" } },
      },
    });
    expect(resolveCompactionSettings(withAgent, "coder").summaryModel).toBe("local/coder-small");
  });

  it("refuses two different models under the two names, naming the key", () => {
    const r = configSchema.safeParse({
      agents: {
        defaults: { compact: { summary_model: "local/a" }, compaction: { model: "local/b" } },
      },
    });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({
      path: ["agents", "defaults", "compaction", "model"],
      message: expect.stringContaining("conflicts with agents.defaults.compact.summary_model"),
    });
  });

  it("carries threshold, reserve and memory flush from config", () => {
    expect(resolveCompactionSettings(config, "main")).toMatchObject({
      threshold: 0.8,
      reserveTokens: 4096,
      memoryFlush: true,
    });
  });
});

describe("shouldCompact", () => {
  const settings = { strategy: "auto" as const, threshold: 0.8, reserveTokens: 4096, keepLastN: 10 };
  it("budget is threshold * window - reserve", () => {
    expect(compactionBudget(settings, 32_768)).toBe(22_118);
    expect(compactionBudget(settings, 128_000)).toBe(98_304);
    // A reserve that would eat the window leaves a quarter of it.
    expect(compactionBudget({ threshold: 0.1, reserveTokens: 10_000 }, 32_768)).toBe(8_192);
  });
  it.each([
    { tokens: 22_118, strategy: "auto", msgs: 50, compact: false, reason: "under_budget" },
    { tokens: 22_119, strategy: "auto", msgs: 50, compact: true, reason: "over_budget" },
    { tokens: 90_000, strategy: "manual", msgs: 50, compact: false, reason: "strategy" },
    { tokens: 90_000, strategy: "off", msgs: 50, compact: false, reason: "strategy" },
    { tokens: 30_000, strategy: "auto", msgs: 1, compact: false, reason: "too_few_messages" },
    { tokens: 90_000, strategy: "auto", msgs: 1, compact: true, reason: "over_window" },
    { tokens: 90_000, strategy: "auto", msgs: 4, compact: true, reason: "over_budget" },
  ] as const)(
    "$strategy, $tokens tokens, $msgs messages -> $reason",
    ({ tokens, strategy, msgs, compact, reason }) => {
      const r = shouldCompact({
        settings: { ...settings, strategy },
        contextWindow: 32_768,
        promptTokens: tokens,
        historyMessages: msgs,
      });
      expect(r).toEqual({ compact, reason, budget: 22_118 });
    },
  );
});

describe("memoryFlushPrompt", () => {
  it("asks for durable facts with exact identifiers and a silent reply", () => {
    const p = memoryFlushPrompt({ date: "2026-06-10" });
    expect(p).toContain("[memory flush 2026-06-10]");
    expect(p).toContain("memory_write");
    expect(p).toContain("Copy identifiers exactly");
    expect(p).toContain(`reply with exactly ${MEMORY_FLUSH_SILENT_REPLY}`);
    expect(memoryFlushPrompt({ toolName: "memory_save" })).toContain("Use memory_save now");
  });
});
