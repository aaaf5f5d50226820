/**
 * Markdown chunking for the memory index: sections by heading, then blocks (paragraphs, list items,
 * fenced code) packed up to {@link CHUNK_CHARS}; a section that needs several chunks repeats the last
 * block(s) of the previous chunk (up to {@link OVERLAP_CHARS}) so a fact split at a boundary keeps
 * its context. Every chunk keeps its heading path and line range, so a hit can be cited as
 * `file:start-end` and opened with read_file.
 */
import { createHash } from "node:crypto";

/** Target size of one chunk: small enough that one fact dominates its vector. */
export const CHUNK_CHARS = 700;
/** Trailing text carried into the next chunk of the same section. */
export const OVERLAP_CHARS = 160;

/** One chunk of a Markdown file. */
export interface MarkdownChunk {
  /** Heading path, e.g. `Cars > Skoda` ("" before the first heading). */
  heading: string;
  text: string;
  /** 1-based, inclusive. */
  lineStart: number;
  lineEnd: number;
}

interface Block {
  lines: string[];
  start: number;
  end: number;
}

/** Content hash of what gets embedded (heading included: it changes the meaning). */
export function chunkHash(heading: string, text: string): string {
  return createHash("sha256").update(heading).update("\u0000").update(text).digest("hex").slice(0, 32);
}

/** The text sent to the embedding model: the heading gives a bare list item its subject. */
export function embedText(heading: string, text: string): string {
  return heading ? `${heading}\n${text}` : text;
}

function blocksOf(lines: string[], from: number, to: number): Block[] {
  const out: Block[] = [];
  let cur: Block | undefined;
  let fence = false;
  for (let i = from; i < to; i++) {
    const l = lines[i] ?? "";
    const isFence = /^\s*(```|~~~)/.test(l);
    if (!fence && l.trim() === "") {
      cur = undefined;
      continue;
    }
    // A list item starts a block of its own (daily notes are one item per entry).
    if (!fence && cur && /^\s{0,3}([-*+]|\d+[.)])\s/.test(l) && !/^\s{4,}/.test(l)) cur = undefined;
    if (!cur) {
      cur = { lines: [], start: i + 1, end: i + 1 };
      out.push(cur);
    }
    cur.lines.push(l);
    cur.end = i + 1;
    if (isFence) fence = !fence;
  }
  return out;
}

function pack(blocks: Block[], heading: string, out: MarkdownChunk[]): void {
  let cur: Block[] = [];
  let size = 0;
  const emit = (): void => {
    if (cur.length === 0) return;
    out.push({
      heading,
      text: cur.map((b) => b.lines.join("\n")).join("\n"),
      lineStart: cur[0]?.start ?? 1,
      lineEnd: cur.at(-1)?.end ?? 1,
    });
  };
  for (const b of blocks) {
    const len = b.lines.join("\n").length;
    if (size > 0 && size + len > CHUNK_CHARS) {
      emit();
      // Overlap: carry the trailing blocks that fit, but never a whole chunk (no progress otherwise).
      const carry: Block[] = [];
      let carried = 0;
      for (let i = cur.length - 1; i > 0; i--) {
        const bl = cur[i];
        if (!bl) break;
        const l = bl.lines.join("\n").length;
        if (carried + l > OVERLAP_CHARS) break;
        carry.unshift(bl);
        carried += l;
      }
      cur = carry;
      size = carried;
    }
    cur.push(b);
    size += len;
  }
  emit();
}

/** Splits Markdown into chunks by heading structure, with overlap inside long sections. */
export function chunkMarkdown(source: string): MarkdownChunk[] {
  const lines = source.replace(/\r\n/g, "\n").split("\n");
  const out: MarkdownChunk[] = [];
  const path: string[] = [];
  let sectionStart = 0;
  let heading = "";
  let fence = false;
  const flush = (end: number): void => pack(blocksOf(lines, sectionStart, end), heading, out);
  lines.forEach((l, i) => {
    if (/^\s*(```|~~~)/.test(l)) fence = !fence;
    const h = fence ? null : /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(l);
    if (!h) return;
    flush(i);
    const level = h[1]?.length ?? 1;
    path.length = Math.min(path.length, level - 1);
    path[level - 1] = h[2] ?? "";
    heading = path.filter((p) => p).join(" > ");
    sectionStart = i + 1;
  });
  flush(lines.length);
  return out;
}
