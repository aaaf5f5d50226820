/**
 * The auto-compaction gate: compact before a model call when the strategy is `auto` and the estimated
 * prompt exceeds `threshold * contextWindow - reserveTokens` (defaults: 0.8 and 4096, the reserve capped
 * at 1/8 of the window), and how far a compaction goes: down to {@link compactionTarget}.
 */
import type { CompactionSettings } from "./compaction-settings.js";

/**
 * Token budget a prompt must stay under: threshold * window - reserve, never below 1/4 of the window.
 * The reserve is at most 1/8 of the window: 4,096 tokens kept free on a 16K window left only 55% of it
 * usable, so compaction came round every few turns.
 */
export function compactionBudget(
  settings: Pick<CompactionSettings, "threshold" | "reserveTokens">,
  contextWindow: number,
): number {
  const reserve = Math.min(settings.reserveTokens, Math.floor(contextWindow / 8));
  const raw = Math.floor(settings.threshold * contextWindow) - reserve;
  // A reserve larger than the threshold would make every prompt "too long"; keep a usable floor.
  return Math.max(Math.floor(contextWindow / 4), raw);
}

export interface ShouldCompactInput {
  settings: Pick<CompactionSettings, "strategy" | "threshold" | "reserveTokens" | "keepLastN">;
  contextWindow: number;
  /** Estimated tokens of the full prompt (system + history + tool specs). */
  promptTokens: number;
  /** History messages (without the system prompt). */
  historyMessages: number;
}

export interface ShouldCompactResult {
  compact: boolean;
  budget: number;
  reason: "over_budget" | "over_window" | "under_budget" | "strategy" | "too_few_messages";
}

/** Decides whether to compact before a model call. */
export function shouldCompact(input: ShouldCompactInput): ShouldCompactResult {
  const budget = compactionBudget(input.settings, input.contextWindow);
  if (input.settings.strategy !== "auto") return { compact: false, budget, reason: "strategy" };
  if (input.promptTokens <= budget) return { compact: false, budget, reason: "under_budget" };
  // Fewer messages than keep_last_n can still be over budget (huge tool outputs); compaction then
  // shrinks the kept tail, so only a history with nothing to fold is skipped, unless it cannot fit
  // the window at all: then the message being answered is cut to fit (never dropped).
  if (input.historyMessages < 2) {
    if (input.promptTokens > input.contextWindow) return { compact: true, budget, reason: "over_window" };
    return { compact: false, budget, reason: "too_few_messages" };
  }
  return { compact: true, budget, reason: "over_budget" };
}

/** Share of the window a prompt may fill right after a compaction (headroom for the next turns). */
export const AFTER_COMPACTION_SHARE = 0.5;

/**
 * Tokens the compacted history must fit in: the gate's budget, but at most half the window, so the
 * next compaction is many turns away instead of one or two. `fixed` is the system prompt and tool specs.
 */
export function compactionTarget(budget: number, contextWindow: number, fixed: number): number {
  return Math.max(256, Math.min(budget, Math.floor(contextWindow * AFTER_COMPACTION_SHARE) - fixed));
}
