/**
 * The one rule that turns a call into the ledger's figure (docs/costs.md). In order:
 *
 * 1. the provider's own figure (`reported`): OpenRouter's `usage.cost`, a LiteLLM proxy's
 *    `x-litellm-response-cost`, a CLI engine's `total_cost_usd`;
 * 2. the call's counts at the model's price (`priced`): `models.pricing`, else the shipped table,
 *    with the provider's rules (cached input, cache writes, reasoning billed as output, long-context
 *    tiers, audio per minute, speech per character, embeddings per token);
 * 3. no price for the model (`default`): the counts at `budgets.default_price`, said once, loudly;
 * 4. the provider reported no counts (`estimated`): counts estimated from the text sent and received,
 *    priced as above.
 *
 * The offline echo model is `free`. Every figure is stored with its source, and every surface (CLI,
 * console, traces, headers, budgets) reads that stored figure, never a figure of its own.
 */
import type { Config } from "../config/schema.js";
import type { Usage } from "../core/usage.js";
import { shippedPrice, type ModelPrice } from "./price-table.js";

/** How a ledger figure was made. */
export type CostSource = "reported" | "priced" | "default" | "estimated" | "free";

/** Sources whose figure is an estimate (marked `≈` on every surface). */
export const ESTIMATED_SOURCES: readonly CostSource[] = ["default", "estimated"];

/** One call to price. */
export interface CallToPrice {
  provider: string;
  model: string;
  usage: Usage;
  /** The provider's own figure (USD), when it gave one. */
  reported?: number | undefined;
  /** The counts were estimated from the text (the provider reported none). */
  estimatedUsage?: boolean | undefined;
  /** Audio seconds (transcription, priced per minute). */
  seconds?: number | undefined;
  /** Characters spoken (speech, priced per character). */
  chars?: number | undefined;
}

/** A priced call. `price` is where a `priced` figure's price came from. */
export interface PricedCall {
  cost: number;
  source: CostSource;
  price?: "config" | "shipped" | "default";
}

/** The price of a model: `models.pricing` (`<provider>/<model>`, then `<model>`), else shipped. */
export function findPrice(
  cfg: Config,
  provider: string,
  model: string,
): { price: ModelPrice; from: "config" | "shipped" } | undefined {
  const own = cfg.models.pricing[`${provider}/${model}`] ?? cfg.models.pricing[model];
  if (own) return { price: own, from: "config" };
  const shipped = shippedPrice(model);
  return shipped ? { price: shipped, from: "shipped" } : undefined;
}

/** True for the offline echo model (free), which is what answers with no provider configured. */
export function isFree(cfg: Config, provider: string): boolean {
  return provider === "echo" && !cfg.models.providers.echo;
}

/**
 * USD of `u` at `p` by the provider's rules. `input` includes cache reads and excludes cache writes,
 * `output` includes reasoning (models/normalize-usage.ts); a prompt over `long_context.above` tokens
 * bills the whole call at the long-context tier, as Gemini and Anthropic do.
 */
export function tokenCost(p: ModelPrice, u: Usage, extra: { seconds?: number; chars?: number } = {}): number {
  const prompt = u.input + u.cacheWrite;
  const tier = p.long_context && prompt > p.long_context.above ? p.long_context : p;
  const uncached = Math.max(0, u.input - u.cacheRead);
  let usd =
    (uncached * tier.input +
      u.cacheRead * (tier.cache_read ?? tier.input) +
      u.cacheWrite * (tier.cache_write ?? tier.input) +
      u.output * tier.output) /
    1_000_000;
  if (p.per_minute !== undefined && extra.seconds !== undefined) usd += (p.per_minute * extra.seconds) / 60;
  if (p.per_million_chars !== undefined && extra.chars !== undefined)
    usd += (p.per_million_chars * extra.chars) / 1_000_000;
  return usd;
}

/** The ledger figure of one call (see the file header for the order). */
export function priceCall(cfg: Config, c: CallToPrice): PricedCall {
  if (isFree(cfg, c.provider)) return { cost: 0, source: "free" };
  if (c.reported !== undefined && Number.isFinite(c.reported) && c.reported >= 0)
    return { cost: c.reported, source: "reported" };
  const found = findPrice(cfg, c.provider, c.model);
  const extra = {
    ...(c.seconds !== undefined ? { seconds: c.seconds } : {}),
    ...(c.chars !== undefined ? { chars: c.chars } : {}),
  };
  if (found) {
    const cost = tokenCost(found.price, c.usage, extra);
    return { cost, source: c.estimatedUsage ? "estimated" : "priced", price: found.from };
  }
  const d = cfg.budgets.default_price;
  const cost = tokenCost({ input: d.input, output: d.output }, c.usage);
  return { cost, source: c.estimatedUsage ? "estimated" : "default", price: "default" };
}

/** Tokens estimated from text where a provider reports none: 4 characters a token, rounded up. */
export function estimateTokens(chars: number): number {
  return chars <= 0 ? 0 : Math.ceil(chars / 4);
}
