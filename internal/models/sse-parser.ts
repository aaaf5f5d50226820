/**
 * A server-sent-events parser over decoded text chunks, for the model client's streamed completions.
 *
 * Hand-written rather than `eventsource-parser` because it is on every model call's hot path and
 * measured cheaper there (see the bench note in openai-provider.ts): a chunk without `\r` is split
 * on `\n` with `indexOf` only, and an event costs one callback with its data string, no event object.
 *
 * Follows the SSE spec's line rules: lines end in `\n`, `\r\n` or `\r` (also when a `\r\n` pair is
 * split across chunks); `:` starts a comment; `data` lines of one event are joined with `\n`; a field
 * value loses one leading space; an event is dispatched at a blank line, only when it had data; a
 * leading byte-order mark is dropped; `id` and `retry` are ignored (a model stream is never resumed).
 * UTF-8 decoding (a character split across chunks) is the caller's: feed it text from a
 * `StringDecoder` or `Readable#setEncoding("utf8")`.
 */

/** Receives each complete event: its joined data and its `event` field ("" when absent). */
export type SseEventHandler = (data: string, event: string) => void;

/** An incremental SSE parser: `feed` text as it arrives, `end` once the body ended. */
export class SseParser {
  /** The unterminated tail of the text fed so far. */
  private rest = "";
  /** The data of the event being read; undefined while it has no `data` line. */
  private data: string | undefined;
  private event = "";
  /** The last chunk ended in `\r`: a `\n` starting the next one belongs to that line ending. */
  private skipLf = false;
  private started = false;

  constructor(private readonly onEvent: SseEventHandler) {}

  /** Parses one chunk of decoded text; complete events are dispatched before it returns. */
  feed(chunk: string): void {
    if (chunk === "") return;
    let text = chunk;
    if (!this.started) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLf) {
      this.skipLf = false;
      if (text.charCodeAt(0) === 10) text = text.slice(1);
    }
    if (this.rest !== "") {
      text = this.rest + text;
      this.rest = "";
    }
    let start = 0;
    if (!text.includes("\r")) {
      // The common case: `\n` line endings only.
      for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
        this.line(text, start, nl);
        start = nl + 1;
      }
    } else {
      const n = text.length;
      for (let i = 0; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c !== 10 && c !== 13) continue;
        this.line(text, start, i);
        if (c === 13) {
          if (i + 1 === n) this.skipLf = true;
          else if (text.charCodeAt(i + 1) === 10) i++;
        }
        start = i + 1;
      }
    }
    if (start < text.length) this.rest = start === 0 ? text : text.slice(start);
  }

  /** Ends the stream: an unterminated last line and an event without its blank line still count. */
  end(): void {
    if (this.rest !== "") {
      const text = this.rest;
      this.rest = "";
      this.line(text, 0, text.length);
    }
    this.skipLf = false;
    this.dispatch();
  }

  /** Handles the line `text[start, end)`. */
  private line(text: string, start: number, end: number): void {
    if (start === end) {
      this.dispatch();
      return;
    }
    const first = text.charCodeAt(start);
    if (first === 58) return; // ":" comment
    // Hot path: "data: " (d a t a : space).
    if (
      first === 100 &&
      end - start >= 5 &&
      text.charCodeAt(start + 1) === 97 &&
      text.charCodeAt(start + 2) === 116 &&
      text.charCodeAt(start + 3) === 97 &&
      text.charCodeAt(start + 4) === 58
    ) {
      const from = start + (text.charCodeAt(start + 5) === 32 ? 6 : 5);
      this.addData(text.slice(from, end));
      return;
    }
    const colon = text.indexOf(":", start);
    const hasValue = colon !== -1 && colon < end;
    const field = text.slice(start, hasValue ? colon : end);
    let value = "";
    if (hasValue) value = text.slice(colon + (text.charCodeAt(colon + 1) === 32 ? 2 : 1), end);
    if (field === "data") this.addData(value);
    else if (field === "event") this.event = value;
    // `id`, `retry` and unknown fields are ignored, as the spec allows for a stream never resumed.
  }

  private addData(value: string): void {
    this.data = this.data === undefined ? value : `${this.data}\n${value}`;
  }

  private dispatch(): void {
    const data = this.data;
    const event = this.event;
    this.data = undefined;
    this.event = "";
    if (data !== undefined) this.onEvent(data, event);
  }
}
