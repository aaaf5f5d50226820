/**
 * The words of an approval question: what the owner reads in the chat, in `familiar approvals show`
 * and in the console, and the hash the answer is bound to.
 *
 * Invariants:
 * - the payload (the command, message, URL or file list that will run or go out) is shown whole up
 *   to {@link CHAT_PAYLOAD_LIMIT} characters; past it the chat question says how many characters are
 *   left out and where the whole text is (`familiar approvals show <id>`, the console, "Show all"),
 *   never a silent cut;
 * - every stranger-controlled character that could make the question read as something else (C0,
 *   C1, DEL, bidi marks, newlines inside names) is escaped (core/visible-text.ts) before it is shown
 *   or hashed, so the hash covers exactly the text the owner saw;
 * - {@link payloadHash} is a sha256 over the action line and the whole shown payload: an answer given
 *   for one hash never settles a call that hashes differently; a chat button carries its first
 *   {@link HASH_PREFIX_LENGTH} hex digits ({@link hashMatches}).
 */
import { createHash } from "node:crypto";
import { visibleLine, visibleText } from "../core/visible-text.js";

/** Characters of the payload a chat question carries before it says how much is left out. */
export const CHAT_PAYLOAD_LIMIT = 1500;

/** What a question is made of (strings as the caller built them; escaped here). */
export interface QuestionParts {
  id: string;
  kind: string;
  /** Why the owner is asked (containment: the taint sources), shown above the payload; may be "". */
  intro: string;
  /** The thing that runs or goes out, whole. */
  payload: string;
  choices: readonly ("target" | "session")[];
  targetLabel?: string | undefined;
  timeoutS: number;
}

/** The payload as shown to the owner: every control and bidi mark escaped, newlines kept. */
export function shownPayload(payload: string): string {
  return visibleText(payload);
}

/** sha256 (hex) of the question's kind and whole shown payload: what an answer is bound to. */
export function payloadHash(kind: string, shown: string): string {
  return createHash("sha256").update(`${kind}\n${shown}`).digest("hex");
}

/**
 * Hex digits of the hash a chat button carries (Telegram's callback data holds 64 bytes): 48 bits,
 * so a different payload matches a given prefix by chance once in 2^48.
 */
export const HASH_PREFIX_LENGTH = 12;

/**
 * Whether `given` names the hash `full`: the whole hash, or a prefix of at least
 * {@link HASH_PREFIX_LENGTH} hex digits (a chat button). Anything shorter or not hex names nothing.
 */
export function hashMatches(full: string, given: string): boolean {
  const g = given.trim().toLowerCase();
  if (!/^[0-9a-f]+$/.test(g) || g.length < HASH_PREFIX_LENGTH || g.length > full.length) return false;
  return full.toLowerCase().startsWith(g);
}

/** `1,234`: a count the owner can read at a glance. */
export function groupedCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** The payload cut for a chat, with the note of what was left out (empty note when nothing was). */
export function chatPayload(shown: string, id: string, limit = CHAT_PAYLOAD_LIMIT): string {
  if (shown.length <= limit) return shown;
  const left = shown.length - limit;
  return (
    `${shown.slice(0, limit)}\n` +
    `[… ${groupedCount(left)} more characters not shown. The whole text: the "Show all" button, the ` +
    `console's Approvals view, or familiar approvals show ${id}]`
  );
}

/** How the owner answers, with the id in every line. */
function answerLines(p: QuestionParts): string {
  const t = formatSeconds(p.timeoutS);
  if (p.choices.length === 0)
    return `Reply /approve ${p.id} to allow or /deny ${p.id} to refuse (expires in ${t}).`;
  return [
    `Reply /approve ${p.id} to allow this once,`,
    ...(p.choices.includes("target")
      ? [`/approve ${p.id} host to allow ${visibleLine(p.targetLabel ?? "this target")},`]
      : []),
    ...(p.choices.includes("session")
      ? [`/approve ${p.id} session to allow this for the rest of the session,`]
      : []),
    `or /deny ${p.id} to refuse (no answer within ${t} counts as no).`,
  ].join("\n");
}

/** The question as the chat shows it (the payload cut at {@link CHAT_PAYLOAD_LIMIT}). */
export function chatQuestion(p: QuestionParts): string {
  const shown = shownPayload(p.payload);
  const intro = p.intro ? `${visibleText(p.intro)}\n` : "";
  return `Approval needed (${visibleText(p.kind)}):\n${intro}${chatPayload(shown, p.id)}\n\n${answerLines(p)}`;
}

/** The question with the whole payload (`approvals show`, the console, "Show all"). */
export function fullQuestion(p: QuestionParts): string {
  const intro = p.intro ? `${visibleText(p.intro)}\n` : "";
  return `Approval needed (${visibleText(p.kind)}):\n${intro}${shownPayload(p.payload)}\n\n${answerLines(p)}`;
}

/** `5 min`, `90s`. */
export function formatSeconds(s: number): string {
  if (s % 60 === 0 && s >= 60) return `${s / 60} min`;
  return `${s}s`;
}

/** The line a closed question gets in the chat (its buttons are gone). */
export function closedNote(o: {
  decision: string;
  withdrawn?: boolean | undefined;
  via?: string | undefined;
}): string {
  if (o.withdrawn) return "withdrawn: the turn that asked ended before an answer";
  if (o.decision === "approved") return "approved";
  if (o.decision === "expired") return "expired: no answer in time, not done";
  return "denied";
}
