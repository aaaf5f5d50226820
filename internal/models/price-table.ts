/**
 * Prices shipped with the program for well-known hosted models (USD; tokens per 1M), from the
 * providers' public price pages as of November 2026. `models.pricing` in config.yaml overrides any of
 * them (a key `<provider>/<model>` or `<model>`), and a price change upstream is one config line away.
 *
 * Matched on the bare model id (vendor prefix and `:tag` removed, lower case): the id itself, or the
 * id followed by a date or version suffix (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`,
 * `claude-3-5-haiku-latest`). Never a looser prefix: `o3-pro` is not `o3`, and a model this table does
 * not know is counted at `budgets.default_price` and said, rather than at a neighbour's price.
 *
 * Open-weight models (Llama, Qwen, Mistral's open models, gpt-oss) are not listed: they are often run
 * locally for nothing, and a shipped price would bill the owner's own GPU.
 */
import type { Config } from "../config/schema.js";
import { bareModelId } from "./known-models.js";

/** One model's price, the shape of a `models.pricing` entry. */
export type ModelPrice = Config["models"]["pricing"][string];

const t = (
  input: number,
  output: number,
  cache_read?: number,
  cache_write?: number,
  long_context?: ModelPrice["long_context"],
): ModelPrice => ({
  input,
  output,
  ...(cache_read !== undefined ? { cache_read } : {}),
  ...(cache_write !== undefined ? { cache_write } : {}),
  ...(long_context ? { long_context } : {}),
});

/** The shipped table, by bare model id. */
export const SHIPPED_PRICES: Readonly<Record<string, ModelPrice>> = {
  // OpenAI chat (cached input at the discounted rate; reasoning billed as output).
  "gpt-5": t(1.25, 10, 0.125),
  "gpt-5-mini": t(0.25, 2, 0.025),
  "gpt-5-nano": t(0.05, 0.4, 0.005),
  "gpt-4.1": t(2, 8, 0.5),
  "gpt-4.1-mini": t(0.4, 1.6, 0.1),
  "gpt-4.1-nano": t(0.1, 0.4, 0.025),
  "gpt-4o": t(2.5, 10, 1.25),
  "gpt-4o-mini": t(0.15, 0.6, 0.075),
  o3: t(2, 8, 0.5),
  "o3-mini": t(1.1, 4.4, 0.55),
  "o4-mini": t(1.1, 4.4, 0.275),
  // OpenAI embeddings (input only), transcription (per minute), speech (per character).
  "text-embedding-3-small": t(0.02, 0),
  "text-embedding-3-large": t(0.13, 0),
  "text-embedding-ada-002": t(0.1, 0),
  "whisper-1": { input: 0, output: 0, per_minute: 0.006 },
  "gpt-4o-transcribe": { input: 0, output: 0, per_minute: 0.006 },
  "gpt-4o-mini-transcribe": { input: 0, output: 0, per_minute: 0.003 },
  "tts-1": { input: 0, output: 0, per_million_chars: 15 },
  "tts-1-hd": { input: 0, output: 0, per_million_chars: 30 },
  // Anthropic (cache writes at 1.25x input, reads at 0.1x; Sonnet 4's 1M window doubles over 200k).
  "claude-opus-4-1": t(15, 75, 1.5, 18.75),
  "claude-opus-4": t(15, 75, 1.5, 18.75),
  "claude-sonnet-4-5": t(3, 15, 0.3, 3.75, {
    above: 200_000,
    input: 6,
    output: 22.5,
    cache_read: 0.6,
    cache_write: 7.5,
  }),
  "claude-sonnet-4": t(3, 15, 0.3, 3.75, {
    above: 200_000,
    input: 6,
    output: 22.5,
    cache_read: 0.6,
    cache_write: 7.5,
  }),
  "claude-3-7-sonnet": t(3, 15, 0.3, 3.75),
  "claude-3-5-sonnet": t(3, 15, 0.3, 3.75),
  "claude-haiku-4-5": t(1, 5, 0.1, 1.25),
  "claude-3-5-haiku": t(0.8, 4, 0.08, 1),
  // Google (Gemini 2.5 Pro bills a prompt over 200k tokens at the higher tier, output included).
  "gemini-2.5-pro": t(1.25, 10, 0.125, undefined, {
    above: 200_000,
    input: 2.5,
    output: 15,
    cache_read: 0.25,
  }),
  "gemini-2.5-flash": t(0.3, 2.5, 0.075),
  "gemini-2.5-flash-lite": t(0.1, 0.4, 0.025),
  "gemini-2.0-flash": t(0.1, 0.4, 0.025),
  // DeepSeek (cache hits at the discounted rate).
  "deepseek-chat": t(0.27, 1.1, 0.07),
  "deepseek-reasoner": t(0.55, 2.19, 0.14),
  // xAI
  "grok-4": t(3, 15, 0.75),
};

/** A date or version suffix after a known id: `2024-08-06`, `20250929`, `latest`, `preview-05-20`. */
const SUFFIX = /^(\d[\d-]*|latest|(preview|exp)(-[\d-]+)?)$/;

/** The shipped price of `model`, or undefined when the table does not know it. */
export function shippedPrice(model: string): ModelPrice | undefined {
  const id = bareModelId(model);
  const exact = SHIPPED_PRICES[id];
  if (exact) return exact;
  let best: string | undefined;
  for (const key of Object.keys(SHIPPED_PRICES))
    if (id.startsWith(`${key}-`) && SUFFIX.test(id.slice(key.length + 1)) && key.length > (best?.length ?? 0))
      best = key;
  return best ? SHIPPED_PRICES[best] : undefined;
}
