/**
 * LLM compaction of a conversation history (REQ-400). Pure apart from the injected summariser:
 * it decides what to keep, what to summarise and what the successor session starts with; persisting
 * that is `lineage.ts`'s job.
 *
 * Invariants:
 * - the kept tail never starts on a tool result (an assistant tool call stays with its results);
 * - the message being answered (the last user message no final answer follows) and everything the
 *   current turn did since (tool calls, tool results) are always kept, whatever keepLastN and the
 *   budget: verbatim when they fit `protectedBudgetTokens`, else cut in the middle with a note the
 *   model sees (`protected-tail.ts`), and `cut` says so for the user's notice. Never summarised,
 *   never dropped, not even by a hard clear;
 * - the result fits `budgetTokens` (summary message + kept messages, as estimated), or, when the
 *   protected tail alone is larger than that, the tail plus a short summary;
 * - it never throws because the summariser failed: it falls back full -> partial -> note -> hard clear.
 *   It only rethrows when `signal` aborts (the turn itself was cancelled);
 * - it is incremental: a history that starts with an earlier compaction's summary is compacted as that
 *   summary plus the new messages (one call when they fit one chunk), never re-summarised from its text,
 *   and a failing summariser never loses the earlier summary.
 *
 * Over 300 lines on purpose: the summarisation algorithm (incremental summary, fitting the window)
 * is one idea.
 */
import type { ChatMessage } from "../../models/types.js";
import { defaultTokenEstimator, type TokenEstimator } from "./token-estimator.js";
import {
  keepSplitIndex,
  nextSafeSplit,
  chunkTokenBudget,
  packChunks,
  SAFETY_MARGIN,
  SUMMARIZATION_OVERHEAD_TOKENS,
  type Block,
} from "./chunking.js";
import {
  chunkSummaryInstructions,
  mergeInstructions,
  previousSummaryOf,
  summaryMessageContent,
  updateInstructions,
} from "./prompts.js";
import { renderMessage } from "./transcript.js";
import { cutTailToFit, pendingTurnStart, type TailCut } from "./protected-tail.js";

/** Calls the summary model with a prompt and returns its text. Injected (the host passes the router). */
export type Summarizer = (prompt: ChatMessage[], signal: AbortSignal) => Promise<string>;

/**
 * - full: every older message is in the summary;
 * - partial: some chunks could not be summarised; they are listed in a note inside the summary;
 * - note: no summary at all, only a plain note of what was dropped;
 * - hard_clear: even that did not fit; the history is cleared down to a marker (and the last user
 *   message when it fits);
 * - noop: nothing older than the kept tail; nothing was changed.
 */
export type CompactionLevel = "full" | "partial" | "note" | "hard_clear" | "noop";

export interface CompactOptions {
  /** The session history, oldest first, without the system prompt. */
  messages: readonly ChatMessage[];
  keepLastN: number;
  observationMask: boolean;
  /** From `/compact <instructions>`. */
  instructions?: string;
  /** Tokens the compacted history (summary message + kept messages) must fit in. */
  budgetTokens: number;
  /**
   * Tokens the protected tail (the message being answered and the current turn) may take before it is
   * cut; may exceed `budgetTokens` (it only has to fit the model's window). Default: `budgetTokens`
   * minus room for a short summary.
   */
  protectedBudgetTokens?: number;
  /** Context window of the summary model (sizes the chunks). */
  summaryContextWindow: number;
  summarize: Summarizer;
  estimator?: TokenEstimator;
  signal?: AbortSignal;
  /** Each summariser failure, for logging; compaction goes on regardless. */
  onError?: (err: unknown, stage: "chunk" | "merge") => void;
}

export interface CompactResult {
  level: CompactionLevel;
  /** Summary text without the marker (the successor's first message is `summaryMessageContent`). */
  summary: string;
  tokensBefore: number;
  tokensAfter: number;
  /** Messages copied verbatim into the successor, in order. */
  keptMessages: ChatMessage[];
  /** Their indexes in `messages` (a contiguous tail, or only the last user message on hard clear). */
  keptIndexes: number[];
  /** Older messages folded into the summary or the note. */
  messagesSummarised: number;
  chunks: number;
  failedChunks: number;
  /** Set when the protected tail had to be cut to fit; `cutIndexes` are indexes in `messages`. */
  cut?: TailCut;
}

/** Room kept beside the protected tail for the summary message when the tail is huge. */
const MIN_SUMMARY_ROOM = 192;

/** Cap on a summary, so it never crowds out the kept tail. */
export function maxSummaryTokens(budgetTokens: number): number {
  return Math.max(256, Math.min(4000, Math.floor(budgetTokens * 0.25)));
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error
    ? reason
    : Object.assign(new Error("compaction aborted"), { name: "AbortError" });
}

/** Cuts text to about `maxTokens` (by the text's own chars-per-token ratio). */
function fitText(text: string, maxTokens: number, est: TokenEstimator): string {
  const t = est.text(text);
  if (t <= maxTokens) return text;
  const chars = Math.max(0, Math.floor((text.length * maxTokens) / t / 1.05) - 40);
  return `${text.slice(0, chars)}\n[... summary cut to fit]`;
}

/** A plain description of dropped messages: counts, tools used, and what the user asked. */
export function dropNote(
  messages: readonly ChatMessage[],
  reason: string,
  maxTokens: number,
  est: TokenEstimator,
): string {
  const counts = { user: 0, assistant: 0, tool: 0, system: 0 };
  const tools = new Set<string>();
  const asks: string[] = [];
  for (const m of messages) {
    counts[m.role]++;
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) tools.add(c.name);
    if (m.role === "user") {
      const text =
        typeof m.content === "string"
          ? m.content
          : m.content.map((p) => (p.type === "text" ? p.text : "")).join(" ");
      const line = text.replace(/\s+/g, " ").trim().slice(0, 160);
      if (line) asks.push(`- ${line}`);
    }
  }
  const head = `${messages.length} earlier messages (${counts.user} from the user, ${counts.assistant} from the assistant, ${counts.tool} tool results) were removed without a summary: ${reason}.`;
  const parts = [head];
  if (tools.size > 0) parts.push(`Tools used: ${[...tools].join(", ")}.`);
  let note = parts.join(" ");
  if (asks.length > 0) {
    // Keep the most recent requests when they do not all fit.
    const lines: string[] = [];
    let used = est.text(note) + 10;
    for (let i = asks.length - 1; i >= 0; i--) {
      const t = est.text(asks[i]!) + 1;
      if (used + t > maxTokens) break;
      lines.unshift(asks[i]!);
      used += t;
    }
    if (lines.length > 0)
      note += `\nWhat the user asked in that part${lines.length < asks.length ? " (most recent)" : ""}:\n${lines.join("\n")}`;
  }
  return fitText(note, maxTokens, est);
}

/** Compacts `opts.messages`. See the module comment for the guarantees. */
export async function compactHistory(opts: CompactOptions): Promise<CompactResult> {
  const est = opts.estimator ?? defaultTokenEstimator;
  const signal = opts.signal ?? new AbortController().signal;
  const msgs = opts.messages;
  const tokensBefore = est.messages(msgs);
  const summaryMsg = (s: string): ChatMessage => ({ role: "system", content: summaryMessageContent(s) });

  // 1. The protected tail (the question being answered and this turn's work), cut only when it
  // alone does not fit; then the kept tail before it, shrunk at safe boundaries until it leaves room
  // for the summary.
  const pFrom = pendingTurnStart(msgs);
  const protectCap = Math.max(64, opts.protectedBudgetTokens ?? opts.budgetTokens - MIN_SUMMARY_ROOM);
  const fitted = cutTailToFit(msgs.slice(pFrom), protectCap, est);
  const cut = fitted.cut
    ? { ...fitted.cut, cutIndexes: fitted.cut.cutIndexes.map((i) => i + pFrom) }
    : undefined;
  const protectedTokens = est.messages(fitted.messages);
  // Only a pending question may lift the budget (it must fit the window, not the post-compaction share).
  const pending = pFrom < msgs.length;
  const budget = pending
    ? Math.max(opts.budgetTokens, protectedTokens + MIN_SUMMARY_ROOM)
    : opts.budgetTokens;
  const summaryCap = pending
    ? Math.max(64, Math.min(maxSummaryTokens(opts.budgetTokens), budget - protectedTokens - 96))
    : maxSummaryTokens(opts.budgetTokens);
  let keptFrom = Math.min(keepSplitIndex(msgs, opts.keepLastN), pFrom);
  const keptBudget = budget - summaryCap - 64;
  while (keptFrom < pFrom && est.messages(msgs.slice(keptFrom, pFrom)) + protectedTokens > keptBudget)
    keptFrom = Math.min(nextSafeSplit(msgs, keptFrom), pFrom);
  // The previous compaction's summary is carried forward as such, not summarised as a message.
  const previous = keptFrom > 0 ? previousSummaryOf(msgs[0]) : undefined;
  const older = msgs.slice(previous !== undefined ? 1 : 0, keptFrom);
  const kept = [...msgs.slice(keptFrom, pFrom), ...fitted.messages];
  if (older.length === 0 && !cut) {
    return {
      level: "noop",
      summary: "",
      tokensBefore,
      tokensAfter: tokensBefore,
      keptMessages: [...msgs],
      keptIndexes: msgs.map((_, i) => i),
      messagesSummarised: 0,
      chunks: 0,
      failedChunks: 0,
    };
  }
  if (older.length === 0) {
    // Only the cut: nothing earlier to summarise; the earlier summary (if any) is carried as it is.
    const summary = previous ?? "There is no earlier conversation.";
    const s = fitText(summary, summaryCap, est);
    return {
      level: "full",
      summary: s,
      tokensBefore,
      tokensAfter: est.messages([summaryMsg(s), ...kept]),
      keptMessages: kept,
      keptIndexes: kept.map((_, i) => keptFrom + i),
      messagesSummarised: keptFrom,
      chunks: 0,
      failedChunks: 0,
      ...(cut ? { cut } : {}),
    };
  }

  // 2. Chunks of stripped transcript.
  const blocks: Block[] = older.map((m, index) => {
    const text = renderMessage(m, opts.observationMask);
    return { index, text, tokens: est.text(text) };
  });
  const avg = blocks.reduce((a, b) => a + b.tokens, 0) / blocks.length;
  // One call when the whole older part (with the running summary) fits the summariser's window beside
  // its instructions and reply; ratio-sized chunks plus a merge only when it does not.
  const prevTokens = previous ? est.text(previous) : 0;
  const olderTokens = blocks.reduce((a, b) => a + b.tokens, 0);
  const fitsOne =
    olderTokens * SAFETY_MARGIN + prevTokens <= opts.summaryContextWindow - SUMMARIZATION_OVERHEAD_TOKENS;
  const chunkBudget = Math.max(256, chunkTokenBudget(avg, opts.summaryContextWindow) - prevTokens);
  const chunks = fitsOne ? [blocks] : packChunks(blocks, chunkBudget, (t) => est.text(t));

  // 3. Summarise each chunk; a failing chunk is retried as two halves ("summarise what fits").
  const call = async (prompt: ChatMessage[], stage: "chunk" | "merge"): Promise<string | undefined> => {
    if (signal.aborted) throw abortError(signal);
    try {
      const out: unknown = await opts.summarize(prompt, signal);
      if (typeof out !== "string" || out.trim() === "") throw new Error("the summariser returned no text");
      if (est.text(out) > summaryCap * 1.5) throw new Error("the summariser returned an oversized summary");
      return out.trim();
    } catch (err) {
      if (signal.aborted) throw abortError(signal);
      opts.onError?.(err, stage);
      return undefined;
    }
  };
  const system = chunkSummaryInstructions({
    observationMask: opts.observationMask,
    ...(opts.instructions ? { instructions: opts.instructions } : {}),
  });
  const summarizeBlocks = (part: Block[], label: string) =>
    call(
      [
        { role: "system", content: system },
        {
          role: "user",
          content: `Conversation ${label}, oldest first:\n\n${part.map((b) => b.text).join("\n\n")}`,
        },
      ],
      "chunk",
    );
  const update = previous
    ? updateInstructions({
        observationMask: opts.observationMask,
        ...(opts.instructions ? { instructions: opts.instructions } : {}),
      })
    : undefined;
  const summaries: string[] = [];
  const dropped: ChatMessage[] = [];
  let failedChunks = 0;
  let updated: string | undefined;
  if (update && chunks.length === 1) {
    // Incremental: previous summary + the new part -> the updated summary, in one call.
    updated = await call(
      [
        { role: "system", content: update },
        {
          role: "user",
          content: `Previous summary:\n${previous}\n\nNew part of the conversation, oldest first:\n\n${chunks[0]!.map((b) => b.text).join("\n\n")}`,
        },
      ],
      "chunk",
    );
  }
  for (let i = 0; i < chunks.length && updated === undefined; i++) {
    const chunk = chunks[i]!;
    const label = chunks.length > 1 ? `part ${i + 1} of ${chunks.length}` : "excerpt";
    const s = await summarizeBlocks(chunk, label);
    if (s !== undefined) {
      summaries.push(s);
      continue;
    }
    failedChunks++;
    const halves =
      chunk.length > 1 ? [chunk.slice(0, chunk.length >> 1), chunk.slice(chunk.length >> 1)] : [];
    for (const h of halves) {
      const hs = await summarizeBlocks(h, `${label} (a smaller piece)`);
      if (hs !== undefined) summaries.push(hs);
      else for (const b of h) dropped.push(older[b.index]!);
    }
    if (halves.length === 0) for (const b of chunk) dropped.push(older[b.index]!);
  }

  // 4. Merge, or fall back to a note.
  let level: CompactionLevel;
  let summary: string;
  // The earlier summary goes first, so a merge (or its fallback) keeps it.
  if (updated === undefined && previous && summaries.length > 0) summaries.unshift(previous);
  if (updated !== undefined) {
    level = "full";
    summary = fitText(updated, summaryCap, est);
  } else if (summaries.length === 0) {
    level = previous ? "partial" : "note";
    summary = previous
      ? `${fitText(previous, summaryCap - Math.max(64, Math.floor(summaryCap / 4)), est)}\n\nNot summarised: ${dropNote(older, "the summariser failed", Math.max(64, Math.floor(summaryCap / 4)), est)}`
      : dropNote(older, "the summariser failed", summaryCap, est);
  } else {
    let merged: string | undefined = summaries[0];
    if (summaries.length > 1) {
      merged = await call(
        [
          {
            role: "system",
            content: mergeInstructions(opts.instructions ? { instructions: opts.instructions } : {}),
          },
          {
            role: "user",
            content: summaries.map((s, i) => `Summary ${i + 1} of ${summaries.length}:\n${s}`).join("\n\n"),
          },
        ],
        "merge",
      );
      // A failed merge still has every part: concatenate them (cut to the cap).
      if (merged === undefined) merged = summaries.join("\n\n");
    }
    level = dropped.length > 0 ? "partial" : "full";
    summary = merged ?? "";
    if (dropped.length > 0) {
      const noteCap = Math.max(64, Math.floor(summaryCap / 4));
      summary = `${fitText(summary, summaryCap - noteCap, est)}\n\nNot summarised: ${dropNote(dropped, "the summariser failed on them", noteCap, est)}`;
    }
    summary = fitText(summary, summaryCap, est);
  }

  // 5. The result must fit the budget; if not, hard clear.
  let keptMessages = kept;
  let keptIndexes = kept.map((_, i) => keptFrom + i);
  let tokensAfter = est.messages([summaryMsg(summary), ...keptMessages]);
  if (tokensAfter > budget) {
    level = "hard_clear";
    const marker = `The conversation history (${msgs.length} messages) was cleared because it could not be made to fit the model's context window.`;
    summary = fitText(marker, Math.max(16, budget - protectedTokens - 16), est);
    if (pFrom < msgs.length) {
      // The protected tail survives a hard clear too (it was sized to leave room for the marker).
      keptMessages = fitted.messages;
      keptIndexes = fitted.messages.map((_, i) => pFrom + i);
    } else {
      keptMessages = [];
      keptIndexes = [];
      const lastUser = msgs.findLast((m) => m.role === "user");
      if (lastUser && est.messages([summaryMsg(summary), lastUser]) <= budget) {
        keptMessages = [lastUser];
        keptIndexes = [msgs.lastIndexOf(lastUser)];
      }
    }
    tokensAfter = est.messages([summaryMsg(summary), ...keptMessages]);
  }

  return {
    level,
    summary,
    tokensBefore,
    tokensAfter,
    keptMessages: [...keptMessages],
    keptIndexes,
    // Everything before the kept tail, the carried-forward summary message included.
    messagesSummarised: keptFrom,
    chunks: chunks.length,
    failedChunks,
    ...(cut ? { cut } : {}),
  };
}
