import { StringDecoder } from "node:string_decoder";
import { describe, expect, it } from "vitest";
import { SseParser } from "./sse-parser.js";

type Ev = [data: string, event: string];

/** Feeds `parts` (text, or bytes decoded the way sse-call.ts does) and ends the stream. */
function parse(parts: (string | Buffer)[]): Ev[] {
  const out: Ev[] = [];
  const p = new SseParser((data, event) => out.push([data, event]));
  const dec = new StringDecoder("utf8");
  for (const part of parts) p.feed(typeof part === "string" ? part : dec.write(part));
  p.feed(dec.end());
  p.end();
  return out;
}

/** Every way of cutting `bytes` in two, and in single bytes. */
function allSplits(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  for (let i = 1; i < bytes.length; i++) out.push([bytes.subarray(0, i), bytes.subarray(i)]);
  out.push([...bytes].map((b) => Buffer.from([b])));
  return out;
}

const chunk = (content: string): string =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}`;

describe("SseParser", () => {
  it("dispatches one event per blank line, data without the one leading space", () => {
    expect(parse([`${chunk("a")}\n\n${chunk("b")}\n\ndata: [DONE]\n\n`])).toEqual([
      [chunk("a").slice(6), ""],
      [chunk("b").slice(6), ""],
      ["[DONE]", ""],
    ]);
    expect(parse(["data:x\n\ndata:  two spaces\n\n"])).toEqual([
      ["x", ""],
      [" two spaces", ""],
    ]);
  });

  it("accepts CRLF and CR line endings, also a CRLF pair split across chunks", () => {
    expect(parse(["data: a\r\n\r\ndata: b\r\rdata: c\n\n"])).toEqual([
      ["a", ""],
      ["b", ""],
      ["c", ""],
    ]);
    // "\r" ends one chunk and its "\n" starts the next: one line end, not two (no empty event).
    expect(parse(["data: a\r", "\ndata: b\r", "\n\r", "\n"])).toEqual([["a\nb", ""]]);
  });

  it("joins multi-line data with \\n, skips comments, keeps the event name, ignores id and retry", () => {
    expect(
      parse([
        ": keep-alive\n\n",
        ": OPENROUTER PROCESSING\n",
        'event: error\nid: 7\nretry: 100\ndata: {"a":\ndata: 1}\n\n',
        "data\n\n",
        "unknown: field\ndata: z\n\n",
      ]),
    ).toEqual([
      ['{"a":\n1}', "error"],
      ["", ""],
      ["z", ""],
    ]);
  });

  it("dispatches nothing for an event without data, and resets the name after each event", () => {
    expect(parse(["event: ping\n\ndata: x\n\n"])).toEqual([["x", ""]]);
  });

  it("drops a leading byte-order mark", () => {
    expect(parse(["\uFEFFdata: x\n\n"])).toEqual([["x", ""]]);
  });

  it("at the end, delivers an unterminated last line and an event missing its blank line", () => {
    expect(parse(["data: a\n\ndata: b"])).toEqual([
      ["a", ""],
      ["b", ""],
    ]);
    expect(parse(["data: a\n"])).toEqual([["a", ""]]);
    expect(parse([""])).toEqual([]);
  });

  it("gives the same events wherever the bytes are cut, inside UTF-8 sequences and CRLF pairs too", () => {
    const text =
      `${chunk("ünïcødé ✓ 🦊")}\r\n\r\n: comment\n` +
      `event: message\ndata: {"x":\ndata: "日本語"}\n\n${chunk("€")}\r\rdata: [DONE]\n\n`;
    const bytes = Buffer.from(text, "utf8");
    const whole = parse([bytes]);
    expect(whole).toEqual([
      [chunk("ünïcødé ✓ 🦊").slice(6), ""],
      ['{"x":\n"日本語"}', "message"],
      [chunk("€").slice(6), ""],
      ["[DONE]", ""],
    ]);
    for (const parts of allSplits(bytes)) expect(parse(parts)).toEqual(whole);
  });
});
