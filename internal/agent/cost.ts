import type { Config } from "../config/schema.js";
import type { Usage } from "../models/types.js";

/**
 * Cost of one call from `models.pricing["<provider>/<model>"]` (USD per 1M tokens), or null when no
 * price is configured. Cached input is charged at `cache_read` when given, else at `input`.
 */
export function costOf(
  pricing: Config["models"]["pricing"],
  provider: string,
  model: string,
  u: Usage,
): number | null {
  const p = pricing[`${provider}/${model}`] ?? pricing[model];
  if (!p) return null;
  const uncachedInput = Math.max(0, u.input - u.cacheRead);
  const cost =
    uncachedInput * p.input +
    u.cacheRead * (p.cache_read ?? p.input) +
    u.cacheWrite * (p.cache_write ?? p.input) +
    u.output * p.output;
  return cost / 1_000_000;
}
