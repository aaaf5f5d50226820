/**
 * Splits markdown text into messages a chat platform accepts (Telegram: 4096 characters; Discord:
 * 2000 characters and at most 17 lines).
 *
 * Invariants:
 * - every chunk is at most `maxLength` characters and at most `maxLines` lines;
 * - cuts prefer a paragraph break, then a line break, then a sentence end, then a space, and only
 *   then a hard cut;
 * - a cut inside a fenced code block closes the fence at the end of the chunk and reopens it (with
 *   the same marker and language) at the start of the next, so every chunk renders on its own;
 * - no text is lost: joining the chunks gives back the input apart from the added fences and the
 *   whitespace at the cut points.
 */

/** Limits for one message. */
export interface ChunkLimits {
  maxLength: number;
  maxLines?: number;
}

/** Telegram's limit on a message's text. */
export const TELEGRAM_LIMITS: ChunkLimits = { maxLength: 4096 };
/** Discord's limits (the line limit keeps long answers readable without "Show more"). */
export const DISCORD_LIMITS: ChunkLimits = { maxLength: 2000, maxLines: 17 };

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

interface Fence {
  marker: string;
  info: string;
}

/** Fence state after scanning `text` from a state `open` (undefined = outside any fence). */
function fenceAfter(text: string, open: Fence | undefined): Fence | undefined {
  let cur = open;
  for (const line of text.split("\n")) {
    const m = FENCE.exec(line);
    if (!m) continue;
    const marker = m[1] ?? "";
    const rest = (m[2] ?? "").trim();
    if (!cur) {
      // Backtick fences may not contain backticks in the info string (CommonMark).
      if (marker[0] === "`" && rest.includes("`")) continue;
      cur = { marker, info: rest };
    } else if (marker[0] === cur.marker[0] && marker.length >= cur.marker.length && rest === "") {
      cur = undefined;
    }
  }
  return cur;
}

/** Longest fence marker in the text (what a close could need). */
function longestFence(text: string): number {
  let n = 0;
  for (const line of text.split("\n")) {
    const m = FENCE.exec(line);
    if (m) n = Math.max(n, (m[1] ?? "").length);
  }
  return n;
}

/** Index just after the end of the `n`-th line (or the text length when it has fewer lines). */
function endOfLine(text: string, n: number): number {
  let idx = -1;
  for (let i = 0; i < n; i++) {
    idx = text.indexOf("\n", idx + 1);
    if (idx < 0) return text.length;
  }
  return idx;
}

/** Best cut position in `text` at or before `limit` (exclusive end of the head). */
function findCut(text: string, limit: number): number {
  const window = text.slice(0, limit + 1);
  const min = Math.floor(limit * 0.3);
  const para = window.lastIndexOf("\n\n", limit);
  if (para >= min && para > 0) return para;
  const line = window.lastIndexOf("\n", limit);
  if (line >= min && line > 0) return line;
  // Sentence end: punctuation followed by whitespace, the cut goes after the punctuation.
  let sentence = -1;
  const re = /[.!?…][)"'\]]?\s/g;
  for (let m = re.exec(window); m; m = re.exec(window)) {
    const end = m.index + m[0].length - 1;
    if (end <= limit) sentence = end;
  }
  if (sentence >= min && sentence > 0) return sentence;
  const space = window.lastIndexOf(" ", limit);
  if (space >= min && space > 0) return space;
  return limit;
}

/**
 * Splits markdown into chunks within `limits`. Empty or whitespace-only input gives no chunks.
 */
export function chunkMarkdown(text: string, limits: ChunkLimits): string[] {
  const maxLength = Math.max(32, limits.maxLength);
  const maxLines = limits.maxLines !== undefined ? Math.max(3, limits.maxLines) : undefined;
  const out: string[] = [];
  let rest = text.replace(/\s+$/, "");
  // Room kept for a closing fence ("\n" + marker) at the end of a chunk cut inside code.
  const fenceLen = longestFence(text);
  const reserve = fenceLen > 0 ? fenceLen + 1 : 0;
  const reserveLines = fenceLen > 0 ? 1 : 0;
  let guard = 0;
  while (rest.length > 0) {
    if (++guard > 100_000) throw new Error("chunkMarkdown made no progress");
    const lines = rest.split("\n").length;
    if (rest.length <= maxLength && (maxLines === undefined || lines <= maxLines)) {
      out.push(rest);
      break;
    }
    let limit = Math.min(rest.length, maxLength - reserve);
    if (maxLines !== undefined) limit = Math.min(limit, endOfLine(rest, maxLines - reserveLines));
    let cut = findCut(rest, limit);
    if (cut <= 0) cut = Math.max(1, limit);
    let head = rest.slice(0, cut).replace(/\s+$/, "");
    // A cut at a line break drops the break; a cut inside a line drops the spaces at the cut.
    let tail =
      rest[cut] === "\n" || rest[cut - 1] === "\n"
        ? rest
            .slice(cut)
            .replace(/^[ \t]*\n/, "")
            .replace(/^\n+/, "")
        : rest.slice(cut).replace(/^[ \t]+/, "");
    const open = fenceAfter(head, undefined);
    if (head.length === 0) {
      // Only whitespace before the cut: drop it and continue.
      rest = tail;
      continue;
    }
    if (open) {
      // A head that ends right on the opening fence line would be an empty block: move it to the tail.
      const lastLine = head.slice(head.lastIndexOf("\n") + 1);
      if (
        FENCE.test(lastLine) &&
        head.lastIndexOf("\n") > 0 &&
        fenceAfter(head.slice(0, head.lastIndexOf("\n")), undefined) === undefined
      ) {
        tail = `${lastLine}\n${tail}`;
        head = head.slice(0, head.lastIndexOf("\n")).replace(/\s+$/, "");
      } else {
        head = `${head}\n${open.marker}`;
        tail = `${open.marker}${open.info}\n${tail}`;
      }
    }
    out.push(head);
    rest = tail;
  }
  return out;
}
