/**
 * Maps any provider's usage object to the one {@link Usage} shape.
 *
 * Conventions (shared with `costOf` in internal/agent/cost.ts):
 * - `input` counts every prompt token including cache reads, excluding cache writes
 *   (OpenAI/Gemini/DeepSeek report it that way; Anthropic's `input_tokens` excludes cache reads,
 *   so they are added back);
 * - `output` counts every generated token including reasoning (as billed);
 * - `reasoning` and `cacheRead` are subsets reported for information;
 * - `total` is the provider's total when given, else `input + cacheWrite + output`.
 * Values that are negative, non-finite or not numbers are ignored, never propagated.
 */
import type { Usage } from "./types.js";

type Rec = Record<string, unknown>;

const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);

/** A non-negative integer count, or undefined for anything else (including numeric strings with junk). */
function num(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined;
  if (typeof v === "string" && /^\d+(\.\d+)?$/.test(v.trim())) return Math.floor(Number(v));
  return undefined;
}

/** First valid count among `keys` of `o`. */
function pick(o: Rec, ...keys: string[]): number | undefined {
  for (const k of keys) {
    const n = num(o[k]);
    if (n !== undefined) return n;
  }
  return undefined;
}

/** First valid count at `o[outer][inner]` for each pair. */
function nested(o: Rec, pairs: [string, string][]): number | undefined {
  for (const [outer, inner] of pairs) {
    const sub = o[outer];
    if (isRec(sub)) {
      const n = num(sub[inner]);
      if (n !== undefined) return n;
    }
  }
  return undefined;
}

const KNOWN_KEYS = [
  "prompt_tokens",
  "completion_tokens",
  "input_tokens",
  "output_tokens",
  "promptTokenCount",
  "candidatesTokenCount",
  "prompt_eval_count",
  "eval_count",
  "inputTokens",
  "outputTokens",
  "inputTokenCount",
  "outputTokenCount",
  "promptTokens",
  "completionTokens",
  "input",
  "output",
  "total_tokens",
  "totalTokens",
  "totalTokenCount",
];

/**
 * Envelopes around the counts: `{usage}`, Gemini's `{usageMetadata}`, Bedrock ConverseStream's
 * `{metadata: {usage, metrics}}` and InvokeModel's `{"amazon-bedrock-invocationMetrics": {...}}`.
 */
const ENVELOPES = [
  "usage",
  "usageMetadata",
  "usage_metadata",
  "metadata",
  "amazon-bedrock-invocationMetrics",
];

/** Unwraps envelopes ({@link ENVELOPES}) when the top level has no counts. */
function unwrap(raw: Rec): Rec {
  if (KNOWN_KEYS.some((k) => k in raw)) return raw;
  for (const k of ENVELOPES) {
    const inner = raw[k];
    if (isRec(inner)) return unwrap(inner);
  }
  return raw;
}

/** Normalizes a provider usage object; anything unrecognised yields zeros. */
export function normalizeUsage(raw: unknown): Usage {
  if (!isRec(raw)) return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 0 };
  const o = unwrap(raw);

  // Anthropic (and Bedrock: Converse's camelCase, InvokeModel's `...TokenCount` metrics) report cache
  // reads/writes beside an input count that excludes them.
  const anthropicRead = pick(
    o,
    "cache_read_input_tokens",
    "cacheReadInputTokens",
    "cacheReadInputTokenCount",
  );
  const anthropicWrite = pick(
    o,
    "cache_creation_input_tokens",
    "cacheWriteInputTokens",
    "cacheCreationInputTokens",
    "cacheWriteInputTokenCount",
  );
  const anthropicStyle = anthropicRead !== undefined || anthropicWrite !== undefined;

  const deepseekHit = pick(o, "prompt_cache_hit_tokens");
  const deepseekMiss = pick(o, "prompt_cache_miss_tokens");

  let input =
    pick(o, "prompt_tokens", "input_tokens", "promptTokenCount", "prompt_eval_count") ??
    pick(o, "inputTokens", "promptTokens", "inputTokenCount", "input");
  if (input === undefined && (deepseekHit !== undefined || deepseekMiss !== undefined))
    input = (deepseekHit ?? 0) + (deepseekMiss ?? 0);

  const cacheRead =
    anthropicRead ??
    deepseekHit ??
    nested(o, [
      ["prompt_tokens_details", "cached_tokens"],
      ["input_tokens_details", "cached_tokens"],
    ]) ??
    pick(
      o,
      "cachedContentTokenCount",
      "cacheReadTokens",
      "cachedInputTokens",
      "cached_tokens",
      "cacheRead",
    ) ??
    0;
  // OpenRouter reports cache writes inside prompt_tokens_details, as part of prompt_tokens: taken out
  // of `input` below so `input` keeps excluding writes (they are priced apart).
  const detailWrite = nested(o, [["prompt_tokens_details", "cache_write_tokens"]]);
  const cacheWrite =
    anthropicWrite ?? detailWrite ?? pick(o, "cacheWriteTokens", "cache_write_tokens", "cacheWrite") ?? 0;
  if (anthropicWrite === undefined && detailWrite !== undefined && input !== undefined)
    input = Math.max(0, input - detailWrite);
  if (anthropicStyle && input !== undefined && anthropicRead !== undefined) input += anthropicRead;

  const reasoning =
    nested(o, [
      ["completion_tokens_details", "reasoning_tokens"],
      ["output_tokens_details", "reasoning_tokens"],
    ]) ??
    pick(o, "thoughtsTokenCount", "reasoningTokens", "reasoning_tokens", "reasoning") ??
    0;

  let output =
    pick(o, "completion_tokens", "output_tokens", "eval_count") ??
    pick(o, "outputTokens", "completionTokens", "outputTokenCount", "output");
  const candidates = pick(o, "candidatesTokenCount");
  // Gemini counts thoughts apart from candidates; both are billed as output.
  if (output === undefined && candidates !== undefined)
    output = candidates + (pick(o, "thoughtsTokenCount") ?? 0);

  const inTokens = input ?? 0;
  const outTokens = output ?? 0;
  const total =
    pick(o, "total_tokens", "totalTokens", "totalTokenCount", "total") ?? inTokens + cacheWrite + outTokens;
  return { input: inTokens, output: outTokens, cacheRead, cacheWrite, reasoning, total };
}
