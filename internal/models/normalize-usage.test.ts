import { describe, expect, it } from "vitest";
import { normalizeUsage } from "./normalize-usage.js";
import { addUsage } from "../core/usage.js";
import type { Usage } from "./types.js";

const u = (p: Partial<Usage>): Usage => ({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  reasoning: 0,
  total: 0,
  ...p,
});

/** One real-shaped sample per provider (copied from the providers' documented responses). */
const cases: { name: string; raw: unknown; want: Usage }[] = [
  {
    name: "OpenAI chat completions",
    raw: {
      prompt_tokens: 1117,
      completion_tokens: 46,
      total_tokens: 1163,
      prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 12,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    want: u({ input: 1117, output: 46, cacheRead: 1024, reasoning: 12, total: 1163 }),
  },
  {
    name: "OpenAI responses API",
    raw: {
      input_tokens: 328,
      input_tokens_details: { cached_tokens: 256 },
      output_tokens: 52,
      output_tokens_details: { reasoning_tokens: 30 },
      total_tokens: 380,
    },
    want: u({ input: 328, output: 52, cacheRead: 256, reasoning: 30, total: 380 }),
  },
  {
    name: "Anthropic messages (input excludes cache)",
    raw: {
      input_tokens: 21,
      cache_creation_input_tokens: 188086,
      cache_read_input_tokens: 3000,
      output_tokens: 393,
      service_tier: "standard",
    },
    want: u({ input: 3021, output: 393, cacheRead: 3000, cacheWrite: 188086, total: 3021 + 188086 + 393 }),
  },
  {
    name: "Gemini usageMetadata (thoughts billed as output)",
    raw: {
      usageMetadata: {
        promptTokenCount: 4096,
        candidatesTokenCount: 120,
        totalTokenCount: 4416,
        cachedContentTokenCount: 2048,
        thoughtsTokenCount: 200,
        promptTokensDetails: [{ modality: "TEXT", tokenCount: 4096 }],
      },
    },
    want: u({ input: 4096, output: 320, cacheRead: 2048, reasoning: 200, total: 4416 }),
  },
  {
    name: "DeepSeek",
    raw: {
      prompt_tokens: 1500,
      completion_tokens: 300,
      total_tokens: 1800,
      prompt_cache_hit_tokens: 1200,
      prompt_cache_miss_tokens: 300,
      completion_tokens_details: { reasoning_tokens: 250 },
    },
    want: u({ input: 1500, output: 300, cacheRead: 1200, reasoning: 250, total: 1800 }),
  },
  {
    name: "DeepSeek cache counts without prompt_tokens",
    raw: { prompt_cache_hit_tokens: 64, prompt_cache_miss_tokens: 36, completion_tokens: 10 },
    want: u({ input: 100, output: 10, cacheRead: 64, total: 110 }),
  },
  {
    name: "Ollama native",
    raw: {
      model: "llama3.2",
      done: true,
      total_duration: 5043500667,
      prompt_eval_count: 26,
      prompt_eval_duration: 325953000,
      eval_count: 290,
      eval_duration: 4709213000,
    },
    want: u({ input: 26, output: 290, total: 316 }),
  },
  {
    name: "camelCase (AI SDK style)",
    raw: { inputTokens: 900, outputTokens: 80, totalTokens: 980, cacheReadTokens: 500, reasoningTokens: 20 },
    want: u({ input: 900, output: 80, cacheRead: 500, reasoning: 20, total: 980 }),
  },
  {
    name: "camelCase prompt/completion with cache writes, total computed",
    raw: { promptTokens: 40, completionTokens: 5, cacheWriteTokens: 7 },
    want: u({ input: 40, output: 5, cacheWrite: 7, total: 52 }),
  },
  {
    name: "already normalized",
    raw: { input: 10, output: 2, cacheRead: 4, cacheWrite: 1, reasoning: 0, total: 13 },
    want: u({ input: 10, output: 2, cacheRead: 4, cacheWrite: 1, total: 13 }),
  },
  {
    name: "negative and non-numeric values are ignored",
    raw: {
      prompt_tokens: -5,
      input_tokens: 12,
      completion_tokens: "lots",
      output_tokens: 3,
      total_tokens: NaN,
    },
    want: u({ input: 12, output: 3, total: 15 }),
  },
  {
    name: "Bedrock Converse (camelCase cache keys; inputTokens excludes cache reads)",
    raw: {
      inputTokens: 30,
      outputTokens: 10,
      totalTokens: 1540,
      cacheReadInputTokens: 1000,
      cacheWriteInputTokens: 500,
    },
    want: u({ input: 1030, output: 10, cacheRead: 1000, cacheWrite: 500, total: 1540 }),
  },
  {
    name: "Bedrock ConverseStream metadata event",
    raw: {
      metadata: {
        usage: { inputTokens: 12, outputTokens: 4, totalTokens: 216, cacheReadInputTokens: 200 },
        metrics: { latencyMs: 812 },
      },
    },
    want: u({ input: 212, output: 4, cacheRead: 200, total: 216 }),
  },
  {
    name: "Bedrock InvokeModel invocation metrics (...TokenCount keys)",
    raw: {
      "amazon-bedrock-invocationMetrics": {
        inputTokenCount: 25,
        outputTokenCount: 7,
        invocationLatency: 900,
        firstByteLatency: 300,
        cacheReadInputTokenCount: 2000,
        cacheWriteInputTokenCount: 100,
      },
    },
    want: u({ input: 2025, output: 7, cacheRead: 2000, cacheWrite: 100, total: 2132 }),
  },
  {
    name: "AI SDK v5 (cachedInputTokens is part of inputTokens)",
    raw: {
      inputTokens: 900,
      outputTokens: 80,
      totalTokens: 980,
      cachedInputTokens: 512,
      reasoningTokens: 20,
    },
    want: u({ input: 900, output: 80, cacheRead: 512, reasoning: 20, total: 980 }),
  },
  {
    name: "OpenRouter (prompt_tokens_details.cache_write_tokens is part of prompt_tokens)",
    raw: {
      prompt_tokens: 1500,
      completion_tokens: 50,
      total_tokens: 1550,
      prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 400 },
    },
    want: u({ input: 1100, output: 50, cacheRead: 1000, cacheWrite: 400, total: 1550 }),
  },
  {
    name: "top-level cache_write_tokens beside input_tokens, total computed",
    raw: { input_tokens: 60, output_tokens: 6, cache_write_tokens: 30 },
    want: u({ input: 60, output: 6, cacheWrite: 30, total: 96 }),
  },
  { name: "garbage", raw: "nope", want: u({}) },
  { name: "null", raw: null, want: u({}) },
];

describe("normalizeUsage", () => {
  it.each(cases)("$name", ({ raw, want }) => {
    expect(normalizeUsage(raw)).toEqual(want);
  });

  it("adds usages field by field", () => {
    expect(addUsage(u({ input: 1, total: 1 }), u({ output: 2, reasoning: 1, total: 2 }))).toEqual(
      u({ input: 1, output: 2, reasoning: 1, total: 3 }),
    );
  });
});
