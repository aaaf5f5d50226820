/**
 * Poll backoff: how long a poll-like tool (process status, fetch of the same URL, a subagent's state)
 * should wait before asking again, given how many times it has already asked without progress.
 * The schedule doubles every 5 polls from 5 s and is capped at 5 minutes:
 *   1-4: no wait, 5-9: 5 s, 10-14: 10 s, 15-19: 20 s, 20-24: 40 s, 25-29: 80 s, 30-34: 160 s, 35+: 300 s.
 */

/** A suggested delay and a sentence the model can act on. */
export interface PollBackoffSuggestion {
  delayMs: number;
  text: string;
}

const FIRST_STEP = 5;
const BASE_MS = 5_000;
const MAX_MS = 300_000;

/** Formats a delay for the model: "45 s", "2 min", "5 min". */
function human(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  const min = ms / 60_000;
  return Number.isInteger(min) ? `${min} min` : `${Math.round(ms / 1000)} s`;
}

/** Suggested delay before the next poll, after `count` polls without progress (count >= 1). */
export function pollBackoff(count: number): PollBackoffSuggestion {
  if (!Number.isFinite(count) || count < FIRST_STEP) return { delayMs: 0, text: "" };
  const steps = Math.floor((count - FIRST_STEP) / 5);
  const delayMs = Math.min(MAX_MS, BASE_MS * 2 ** steps);
  return {
    delayMs,
    text: `Wait at least ${human(delayMs)} before polling again (for example with a sleep or by doing other work), or stop polling and tell the user the task is still running.`,
  };
}
