/**
 * What the `claude-cli` engine writes to the CLI: the turn's text, its images, the system prompt, and
 * the conversation from Familiar's store for a CLI session that starts without the CLI's own copy
 * (a failed `--resume`, `/compact`, an ephemeral turn).
 */
import type { ChatMessage } from "../../models/types.js";
import { NOW_PREFIX } from "../prompt.js";
import { SUMMARY_MARKER } from "../compaction/prompts.js";

/**
 * Most characters of stored conversation a seeded CLI session is given (about 30K tokens): the newest
 * messages that fit, so the seed never crowds out the turn on any Claude model.
 */
export const SEED_MAX_CHARS = 120_000;

export function textOf(m: ChatMessage | undefined): string {
  if (!m) return "";
  if (typeof m.content === "string") return m.content;
  return (m.content ?? []).flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
}

/**
 * The system prompt the host built for this turn (its first message), if any, without the clock
 * line: a subprocess lives for hours with the prompt it started with, and Claude Code states the
 * date itself.
 */
export function systemText(messages: readonly ChatMessage[]): string | undefined {
  const first = messages[0];
  if (first?.role !== "system") return undefined;
  const text = textOf(first)
    .split("\n\n")
    .filter((p) => !p.startsWith(NOW_PREFIX))
    .join("\n\n")
    .trim();
  return text || undefined;
}

/**
 * The images of the current user message (ChatWithImages: `data:` URLs) as Anthropic image blocks,
 * which the stream-json input takes as they are. Other URLs are left out (the CLI cannot fetch them).
 */
export function imageBlocks(messages: readonly ChatMessage[]): object[] {
  const last = messages.at(-1);
  if (last?.role !== "user" || typeof last.content === "string") return [];
  const out: object[] = [];
  for (const p of last.content) {
    if (p.type !== "image_url") continue;
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.image_url.url);
    if (m) out.push({ type: "image", source: { type: "base64", media_type: m[1], data: m[2] } });
  }
  return out;
}

/** The current message: the last user message or system event. */
export function lastText(messages: readonly ChatMessage[]): string {
  return textOf([...messages].reverse().find((m) => m.role === "user" || m.role === "system"));
}

/** A seeded first message and how much of the stored conversation it carries. */
export interface Seed {
  text: string;
  /** Earlier messages included. */
  included: number;
  /** Earlier messages left out for room (the oldest). */
  omitted: number;
}

const LABEL: Record<string, string> = { user: "User", assistant: "Assistant", system: "System" };

/** One stored message as a transcript line; a compaction summary names itself (its marker). */
function lineOf(m: ChatMessage): string {
  const text = textOf(m).trim();
  if (!text) return "";
  if (m.role === "system" && text.startsWith(SUMMARY_MARKER)) return text;
  return `${LABEL[m.role] ?? m.role}: ${text}`;
}

/**
 * The turn's message preceded by the stored conversation (everything after the system prompt and
 * before the current message: user and assistant text, and a compaction summary), newest first into
 * `maxChars`, oldest left out. A compaction summary is kept ahead of everything else: it stands for
 * the whole older conversation in one message. Without earlier messages it is the plain message.
 */
export function seedText(messages: readonly ChatMessage[], maxChars = SEED_MAX_CHARS): Seed {
  const current = lastText(messages);
  const body = messages
    .slice(1, -1)
    .filter((m) => m.role === "user" || m.role === "assistant" || m.role === "system");
  const entries = body.map((m) => ({ m, line: lineOf(m) })).filter((e) => e.line !== "");
  if (entries.length === 0) return { text: current, included: 0, omitted: 0 };
  let room = maxChars;
  const keep = new Set<number>();
  const summaries = entries.flatMap((e, i) => (e.m.role === "system" ? [i] : []));
  const take = (i: number): boolean => {
    const len = entries[i]!.line.length + 2;
    if (len > room) return false;
    room -= len;
    keep.add(i);
    return true;
  };
  // The newest summary first; then the newest messages, without gaps: stop at the first that no longer fits.
  const summary = summaries.at(-1);
  if (summary !== undefined) take(summary);
  for (let i = entries.length - 1; i >= 0; i--) if (!keep.has(i) && !take(i)) break;
  const kept = entries.filter((_, i) => keep.has(i));
  const omitted = entries.length - kept.length;
  const note = omitted > 0 ? ` (the ${omitted} oldest messages left out for room)` : "";
  const text =
    `Conversation so far${note}:\n\n` +
    `${kept.map((e) => e.line).join("\n\n")}\n\nCurrent message:\n${current}`;
  return { text, included: kept.length, omitted };
}
