/**
 * The silent pre-compaction memory-flush turn: before auto-compaction folds older turns into a summary,
 * the model gets one chance to write durable facts to the workspace memory with its memory tool.
 * The host runs it (when the agent has the memory tool and `compact.memory_flush` is true) as a
 * system-event turn whose reply is not delivered; a reply of exactly MEMORY_FLUSH_SILENT_REPLY means
 * there was nothing to save.
 */

/** The reply meaning "nothing to save"; the host never shows the flush turn's reply anyway. */
export const MEMORY_FLUSH_SILENT_REPLY = "NO_REPLY";

/** Prompt of the flush turn. `toolName` is the memory tool's name (default `memory_write`). */
export function memoryFlushPrompt(opts: { toolName?: string; date?: string } = {}): string {
  const tool = opts.toolName ?? "memory_write";
  return [
    `[memory flush${opts.date ? ` ${opts.date}` : ""}] This conversation is about to be compacted: older messages will be replaced by a summary, and details not saved now may be lost.`,
    `Use ${tool} now to save anything worth remembering beyond this conversation: facts about the owner and the people and things they care about (names, preferences, dates, addresses, numbers, ids), decisions made, commitments you made, and tasks still open. Copy identifiers exactly. Skip what is already saved, small talk and anything temporary.`,
    `This is a silent housekeeping turn: the user will not see your reply. Do not ask questions. When you are done, or if there is nothing to save, reply with exactly ${MEMORY_FLUSH_SILENT_REPLY}.`,
  ].join("\n\n");
}

/** A message of the flush turn's history. */
export interface FlushMessage {
  role: "user" | "assistant";
  content: string;
}

/** Share of the context window the flush's history may take: the rest is the system prompt, tools, prompt and reply. */
export const FLUSH_HISTORY_SHARE = 0.5;

/**
 * The history the flush turn sends, cut to fit `budgetTokens` (estimated at 4 characters a token,
 * like the compactor's default estimator). A flush runs because the session has reached its
 * window, so the whole history never fits: it used to be sent whole and the provider refused the
 * call (issue 46). The newest messages are kept (what is about to be folded away is the freshest
 * detail), whole, oldest dropped first; a newest message too long on its own keeps its end.
 * Invariant: the result's estimated size is at most `budgetTokens` (and empty when that is < 1).
 */
export function fitFlushHistory(history: readonly FlushMessage[], budgetTokens: number): FlushMessage[] {
  let left = Math.floor(budgetTokens) * 4;
  const kept: FlushMessage[] = [];
  for (let i = history.length - 1; i >= 0 && left > 0; i--) {
    const m = history[i]!;
    if (m.content.length <= left) {
      kept.push(m);
      left -= m.content.length;
      continue;
    }
    // Only the newest message may be cut: an older one that does not fit ends the history there.
    if (kept.length === 0) kept.push({ role: m.role, content: m.content.slice(m.content.length - left) });
    break;
  }
  return kept.reverse();
}
