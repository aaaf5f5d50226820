/**
 * The part of a history compaction may never summarise (issue 34): the message being answered and
 * what the current turn has done since (the assistant's tool calls and their results). Summarising
 * it left the model a prompt of system messages only, and it answered nothing.
 *
 * Invariants:
 * - the protected tail starts at the last user message that no final assistant answer follows
 *   (a pending question); a history whose last question was answered has none;
 * - when the tail alone is larger than its budget, its largest texts are cut in the middle (head and
 *   end kept, where a question usually is) with a note the model sees; messages are never dropped,
 *   tool calls never separated from their results, images never removed.
 */
import type { ChatMessage, ContentPart } from "../../models/types.js";
import type { TokenEstimator } from "./token-estimator.js";

/** Index where the protected tail starts; `messages.length` when nothing is pending. */
export function pendingTurnStart(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    // A final answer (no tool calls) closes the turn: what precedes it was answered.
    if (m.role === "assistant" && !(m.tool_calls && m.tool_calls.length > 0)) return messages.length;
    if (m.role === "user") return i;
  }
  return messages.length;
}

/** What cutting the protected tail did, for the user's notice. */
export interface TailCut {
  /** Indexes (in the tail) of the messages whose text was cut. */
  cutIndexes: number[];
  /** Estimated tokens of the tail before and after the cut. */
  tokensBefore: number;
  tokensAfter: number;
  /** Characters removed over all cut messages. */
  charsRemoved: number;
}

/** The note the model sees where text was cut. */
export function cutNote(removed: number, kind: "message" | "tool result"): string {
  return `\n\n[... ${removed.toLocaleString("en-US")} characters of this ${kind} were cut here because it does not fit the model's context window; the beginning and the end are kept. Tell the user that the middle of it was not read ...]\n\n`;
}

/** Cuts `text` to about `maxTokens`, keeping two thirds from the head and one third from the end. */
function cutMiddle(
  text: string,
  maxTokens: number,
  kind: "message" | "tool result",
  est: TokenEstimator,
): { text: string; removed: number } {
  const tokens = est.text(text);
  if (tokens <= maxTokens) return { text, removed: 0 };
  const noteTokens = est.text(cutNote(text.length, kind));
  const keepTokens = Math.max(0, maxTokens - noteTokens);
  // The text's own chars-per-token ratio, with a little slack for the estimate's rounding.
  const keepChars = Math.max(0, Math.floor((text.length * keepTokens) / tokens / 1.05));
  const head = Math.ceil((keepChars * 2) / 3);
  const tail = keepChars - head;
  const removed = text.length - head - tail;
  return {
    text: `${text.slice(0, head)}${cutNote(removed, kind)}${tail > 0 ? text.slice(text.length - tail) : ""}`,
    removed,
  };
}

interface Piece {
  msg: number;
  part?: number;
  tokens: number;
}

/** The texts of the tail that may be cut: user text (parts too) and tool results. */
function pieces(tail: readonly ChatMessage[], est: TokenEstimator): Piece[] {
  const out: Piece[] = [];
  tail.forEach((m, msg) => {
    if (m.role === "tool") out.push({ msg, tokens: est.text(m.content) });
    else if (m.role === "user") {
      if (typeof m.content === "string") out.push({ msg, tokens: est.text(m.content) });
      else
        m.content.forEach((p, part) => {
          if (p.type === "text") out.push({ msg, part, tokens: est.text(p.text) });
        });
    }
  });
  return out;
}

/**
 * The largest per-text size L such that cutting every text above L to L saves `excess` tokens
 * ("water filling": the big texts are cut, the small ones left alone).
 */
function levelFor(sizes: readonly number[], excess: number): number {
  const sorted = [...sizes].sort((a, b) => b - a);
  let saved = 0;
  for (let k = 0; k < sorted.length; k++) {
    const next = sorted[k + 1] ?? 0;
    // Lowering the top k+1 texts from sorted[k] to `next` saves (k+1) * (sorted[k] - next).
    const step = (k + 1) * (sorted[k]! - next);
    if (saved + step >= excess) return Math.max(0, Math.floor(sorted[k]! - (excess - saved) / (k + 1)));
    saved += step;
  }
  return 0;
}

/**
 * Returns the tail cut to fit `maxTokens` (as estimated), or the same messages when they fit.
 * Cuts a little more each round until it fits or nothing is left to cut.
 */
export function cutTailToFit(
  tail: readonly ChatMessage[],
  maxTokens: number,
  est: TokenEstimator,
): { messages: ChatMessage[]; cut?: TailCut } {
  const before = est.messages(tail);
  if (before <= maxTokens) return { messages: [...tail] };
  let out: ChatMessage[] = [...tail];
  let charsRemoved = 0;
  const cutIndexes = new Set<number>();
  for (let round = 0; round < 6; round++) {
    const excess = est.messages(out) - maxTokens;
    if (excess <= 0) break;
    const ps = pieces(out, est);
    if (ps.length === 0) break;
    // Later rounds ask for more than the bare excess: each cut adds a note of its own.
    const level = levelFor(
      ps.map((p) => p.tokens),
      excess + 64 * ps.length * (round + 1),
    );
    const next = [...out];
    for (const p of ps) {
      if (p.tokens <= level) continue;
      const m = next[p.msg]!;
      const kind = m.role === "tool" ? "tool result" : "message";
      if (m.role === "tool") {
        const c = cutMiddle(m.content, level, kind, est);
        next[p.msg] = { ...m, content: c.text };
        charsRemoved += c.removed;
      } else if (m.role === "user") {
        if (typeof m.content === "string") {
          const c = cutMiddle(m.content, level, kind, est);
          next[p.msg] = { role: "user", content: c.text };
          charsRemoved += c.removed;
        } else {
          const parts: ContentPart[] = m.content.map((part, i) => {
            if (i !== p.part || part.type !== "text") return part;
            const c = cutMiddle(part.text, level, kind, est);
            charsRemoved += c.removed;
            return { ...part, text: c.text };
          });
          next[p.msg] = { role: "user", content: parts };
        }
      }
      cutIndexes.add(p.msg);
    }
    out = next;
  }
  return {
    messages: out,
    cut: {
      cutIndexes: [...cutIndexes].sort((a, b) => a - b),
      tokensBefore: before,
      tokensAfter: est.messages(out),
      charsRemoved,
    },
  };
}
