/**
 * Text that strangers control (names, URLs, commands a model chose, message text), made visible
 * before it is shown to the owner: in a terminal, a chat question, the console. An escape sequence
 * could rewrite the screen, and a bidi override or a newline inside a file name can make a question
 * read as something it is not ("report.pdf\n✅ Familiar checked this request").
 *
 * Invariant: the result contains no C0 control (except `\n` and `\t` where allowed), no DEL, no C1
 * control (U+0080-U+009F), no bidi mark (U+200E/F, U+061C), embedding, override or isolate
 * (U+202A-202E, U+2066-2069), and for {@link visibleLine} no line or paragraph separator; each is
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

/** One line (a name, a URL, a path, a command): every control, newlines included, made visible. */
export function visibleLine(s: string): string {
  return s.replace(CONTROLS_AND_LINES, escape);
}

/** Text that may span lines (a message, a model's answer): newlines and tabs kept. */
export function visibleText(s: string): string {
  return s.replace(CONTROLS, escape);
}
