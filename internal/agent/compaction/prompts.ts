/**
 * Instructions given to the summarising model. They are the product: a summary that loses a file path,
 * an order number or an open promise is worse than no summary.
 */

const IDENTIFIERS =
  "Copy every identifier exactly as written, character for character: names of people, places and things, numbers, amounts, dates and times, file paths, URLs, email addresses, ids, hashes, commands, versions. Never round, translate, abbreviate or paraphrase them.";

const MASKED =
  "Drop greetings, thanks, acknowledgements, small talk, raw tool output and error traces (keep only what a tool result established, e.g. 'the build failed with error E1234 in src/a.ts'). Keep named entities, numbers, decisions and their reasons, facts learned about the user, and unresolved questions.";

const RAW =
  "Keep the substance of every turn, including what tools returned, because later work may depend on the exact output.";

/** System prompt for summarising one chunk of older conversation. */
export function chunkSummaryInstructions(opts: { observationMask: boolean; instructions?: string }): string {
  return [
    "You compress part of a conversation between a user and an AI assistant so the assistant can continue it without the original messages. Write a dense summary in the conversation's language, as bullet points under these headings when they apply: Context, Facts and identifiers, Decisions, Active tasks and TODOs, Commitments (what the assistant promised), Open questions.",
    IDENTIFIERS,
    opts.observationMask ? MASKED : RAW,
    "Do not invent anything, do not address the user, and do not add commentary about the summary itself. Output only the summary.",
    ...(opts.instructions ? [`Additional instructions from the user: ${opts.instructions}`] : []),
  ].join("\n\n");
}

/**
 * System prompt for an incremental compaction: the previous summary plus the newest part of the
 * conversation in, one updated summary out (one call instead of re-summarising everything). It starts
 * like the chunk prompt on purpose: it is a chunk summary that also carries the running one.
 */
export function updateInstructions(opts: { observationMask: boolean; instructions?: string }): string {
  return [
    "You compress part of a conversation between a user and an AI assistant (its newest messages) into the running summary of the earlier part, so the assistant can continue without the original messages. You get the previous summary, then the new messages. Output the complete updated summary in the conversation's language, as bullet points under these headings when they apply: Context, Facts and identifiers, Decisions, Active tasks and TODOs, Commitments (what the assistant promised), Open questions.",
    "Keep everything from the previous summary that still holds; when the new part resolves or overrides something, keep only the outcome. Remove duplicates.",
    IDENTIFIERS,
    opts.observationMask ? MASKED : RAW,
    "Do not invent anything, do not address the user, and do not add commentary about the summary itself. Output only the summary.",
    ...(opts.instructions ? [`Additional instructions from the user: ${opts.instructions}`] : []),
  ].join("\n\n");
}

/** The previous summary when `m` is a successor's summary message, else undefined. */
export function previousSummaryOf(m: { role: string; content: unknown } | undefined): string | undefined {
  if (m?.role !== "system" || typeof m.content !== "string") return undefined;
  return m.content.startsWith(`${SUMMARY_MARKER}\n`) ? m.content.slice(SUMMARY_MARKER.length + 1) : undefined;
}

/** System prompt for merging several chunk summaries into one. */
export function mergeInstructions(opts: { instructions?: string }): string {
  return [
    "You merge consecutive summaries of one conversation (oldest first) into a single summary the assistant will continue from. Keep the same headings: Context, Facts and identifiers, Decisions, Active tasks and TODOs, Commitments, Open questions.",
    "Keep every active task, decision, TODO, commitment and open question; when a later part resolves or overrides an earlier one, keep only the outcome. Remove duplicates.",
    IDENTIFIERS,
    "Output only the merged summary.",
    ...(opts.instructions ? [`Additional instructions from the user: ${opts.instructions}`] : []),
  ].join("\n\n");
}

/** First line of the summary message in a successor session; marks it for people and code alike. */
export const SUMMARY_MARKER = "[Summary of earlier conversation]";

/** The content of the summary message stored at the start of a successor session. */
export function summaryMessageContent(summary: string): string {
  return `${SUMMARY_MARKER}\n${summary.trim()}`;
}
