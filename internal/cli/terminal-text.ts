/**
 * Text that strangers control (display names, usernames, chat titles, message and model text) is
 * made safe before the CLI prints it to the owner's terminal: an escape sequence could set the window
 * title, clear the screen, move the cursor to overwrite the line that says which user a pairing code
 * belongs to, or (OSC 52) write the clipboard; bidi overrides reorder what is shown.
 *
 * Invariant: the result contains no C0 control (except `\n` and `\t` where allowed), no DEL, no C1
 * control (U+0080-U+009F, 8-bit CSI among them) and no bidi embedding/override/isolate; each is
 * shown as a visible `\xNN` / `\u{NNNN}` escape, so an attempt is seen, not obeyed.
 */

/* eslint-disable no-control-regex -- matching control characters is the point */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const CONTROLS_AND_LINES =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]/g;
/* eslint-enable no-control-regex */

function escape(c: string): string {
  const n = c.codePointAt(0) ?? 0;
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u{${n.toString(16)}}`;
}

/** One line of stranger text (a name, a title): every control, newlines included, made visible. */
export function safeLine(s: string): string {
  return s.replace(CONTROLS_AND_LINES, escape);
}

/** Stranger text that may span lines (a message, a model's answer): newlines and tabs kept. */
export function safeText(s: string): string {
  return s.replace(CONTROLS, escape);
}
