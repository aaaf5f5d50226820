/**
 * Splitting for compaction: where the kept tail starts, and how the older part is packed into
 * token-budgeted chunks for the summariser (REQ-400 constants).
 */
import type { ChatMessage } from "../../models/types.js";

export const SUMMARIZATION_OVERHEAD_TOKENS = 4096;
export const BASE_CHUNK_RATIO = 0.4;
export const MIN_CHUNK_RATIO = 0.15;
export const SAFETY_MARGIN = 1.2;
/** Smallest chunk worth a summariser call. */
export const MIN_CHUNK_TOKENS = 512;

/**
 * Index where the kept tail starts: the last `keepLastN` messages, moved earlier while it would start
 * on a tool result, so an assistant tool-call message always stays with all of its results.
 */
export function keepSplitIndex(messages: readonly ChatMessage[], keepLastN: number): number {
  let s = Math.max(0, messages.length - Math.max(0, keepLastN));
  while (s > 0 && s < messages.length && messages[s]!.role === "tool") s--;
  return s;
}

/** The next index after `from` where a kept tail may start (not on a tool result); `length` if none. */
export function nextSafeSplit(messages: readonly ChatMessage[], from: number): number {
  let s = from + 1;
  while (s < messages.length && messages[s]!.role === "tool") s++;
  return Math.min(s, messages.length);
}

/**
 * Chunk ratio of the summariser's window: 0.4 normally, lower (down to 0.15) when messages are large
 * on average, so one chunk never holds only a couple of huge messages with no room to summarise.
 */
export function adaptiveChunkRatio(avgMessageTokens: number, contextWindow: number): number {
  const safeAvg = avgMessageTokens * SAFETY_MARGIN;
  const avgRatio = safeAvg / Math.max(1, contextWindow);
  if (avgRatio <= 0.1) return BASE_CHUNK_RATIO;
  const reduction = Math.min(avgRatio * 2, BASE_CHUNK_RATIO - MIN_CHUNK_RATIO);
  return Math.max(MIN_CHUNK_RATIO, BASE_CHUNK_RATIO - reduction);
}

/** Token budget of one chunk's transcript in a summariser window of `contextWindow`. */
export function chunkTokenBudget(avgMessageTokens: number, contextWindow: number): number {
  const ratio = adaptiveChunkRatio(avgMessageTokens, contextWindow);
  return Math.max(MIN_CHUNK_TOKENS, Math.floor(contextWindow * ratio) - SUMMARIZATION_OVERHEAD_TOKENS);
}

export interface Block {
  /** Index of the source message. */
  index: number;
  text: string;
  tokens: number;
}

/**
 * Greedy packing in order. Estimates are inflated by the safety margin; a block bigger than a whole
 * chunk is cut to fit (its head is what carries the meaning) so it can never make a chunk overflow.
 */
export function packChunks(
  blocks: readonly Block[],
  maxTokens: number,
  estimate: (text: string) => number,
): Block[][] {
  const chunks: Block[][] = [];
  let cur: Block[] = [];
  let used = 0;
  for (const b of blocks) {
    let block = b;
    if (b.tokens * SAFETY_MARGIN > maxTokens) {
      // Cut by the block's own chars-per-token so the kept head is close to the budget.
      const chars = Math.max(200, Math.floor((b.text.length * maxTokens) / (b.tokens * SAFETY_MARGIN * 1.1)));
      const text = `${b.text.slice(0, chars)}\n[... ${b.text.length - chars} more characters omitted]`;
      block = { index: b.index, text, tokens: estimate(text) };
    }
    const cost = block.tokens * SAFETY_MARGIN;
    if (cur.length > 0 && used + cost > maxTokens) {
      chunks.push(cur);
      cur = [];
      used = 0;
    }
    cur.push(block);
    used += cost;
  }
  if (cur.length > 0) chunks.push(cur);
  return chunks;
}
