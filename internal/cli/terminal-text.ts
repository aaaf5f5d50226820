/**
 * Text that strangers control (display names, usernames, chat titles, message and model text) is
 * made safe before the CLI prints it to the owner's terminal: an escape sequence could set the window
 * title, clear the screen, move the cursor to overwrite the line that says which user a pairing code
 * belongs to, or (OSC 52) write the clipboard; bidi overrides reorder what is shown.
 *
 * Invariant: see internal/core/visible-text.ts (one escaping for the terminal and every approval
 * question, so what the owner sees in the chat and in `familiar approvals show` is the same text).
 */
import { visibleLine, visibleText } from "../core/visible-text.js";

/** One line of stranger text (a name, a title): every control, newlines included, made visible. */
export function safeLine(s: string): string {
  return visibleLine(s);
}

/** Stranger text that may span lines (a message, a model's answer): newlines and tabs kept. */
export function safeText(s: string): string {
  return visibleText(s);
}
