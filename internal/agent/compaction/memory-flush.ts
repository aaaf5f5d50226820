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
