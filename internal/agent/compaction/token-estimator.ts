/**
 * Token estimation for compaction decisions. Pluggable: anything implementing {@link TokenEstimator}
 * can replace the default (e.g. a real BPE tokenizer for a known model family).
 *
 * The default is a character-class heuristic that imitates how BPE tokenizers (cl100k/o200k) pre-split
 * text: words, digit groups of up to three, punctuation, whitespace runs, and non-Latin scripts that
 * cost about a token per one or two characters. It is deliberately conservative: it should never
 * estimate fewer tokens than a real tokenizer (an under-estimate overflows the context window; an
 * over-estimate only compacts a little early). The test pins its error on prose, code, JSON, logs and
 * non-Latin text: never below the larger of cl100k/o200k, and at most ~40% above it.
 */
import type { ChatMessage } from "../../models/types.js";

/** Estimates tokens of text and chat messages. Implementations must be pure and fast. */
export interface TokenEstimator {
  /** Tokens of a piece of text. */
  text(s: string): number;
  /** Tokens of one message as sent to the model, framing overhead included. */
  message(m: ChatMessage): number;
  /** Tokens of a whole prompt (sum of messages plus the reply priming). */
  messages(ms: readonly ChatMessage[]): number;
}

/** Framing tokens per message (role, separators) in OpenAI-style chat formats, rounded up. */
export const MESSAGE_OVERHEAD_TOKENS = 5;
/** Framing per tool call (id, type, function wrapper). */
export const TOOL_CALL_OVERHEAD_TOKENS = 12;
/** Reply priming (`<|start|>assistant<|message|>`). */
export const PROMPT_OVERHEAD_TOKENS = 3;
/** An image part, charged as a high-detail tile set (the largest common case). */
export const IMAGE_TOKENS = 1105;

// Tuned against cl100k/o200k counts of the samples in testdata/token-samples.ts (see the test).
/** Each extra mark in a punctuation cluster (`");`, `":`): clusters often merge. */
const PUNCT_RUN_EXTRA = 0.3;
/** A mark glued to the following word (`.js`, `_fetch`, `"name`). */
const JOIN_COST = 0.5;
/** Words up to this many letters are one token; longer ones cost one per WORD_CHARS letters. */
const SHORT_WORD = 6;
const WORD_CHARS = 5;
/** Overall safety factor: the heuristic must not under-estimate. */
const SAFETY = 1.05;

// Character classes (plain numbers: const enums are not inlined under per-file transpilers).
const LETTER = 0;
const DIGIT = 1;
const SPACE = 2;
const NEWLINE = 3;
const PUNCT = 4;
const OTHER = 5;

/** Class of each ASCII code; everything >= 128 is `Other`. A table keeps the hot loop branch-light. */
const ASCII_CLASS = (() => {
  const t = new Uint8Array(128).fill(PUNCT);
  for (let c = 0; c < 128; c++) {
    if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90)) t[c] = LETTER;
    else if (c >= 48 && c <= 57) t[c] = DIGIT;
    else if (c === 32 || c === 9) t[c] = SPACE;
    else if (c === 10 || c === 13) t[c] = NEWLINE;
  }
  return t;
})();

function cls(c: number): number {
  return c < 128 ? ASCII_CLASS[c]! : OTHER;
}

/** Cost of one non-ASCII code unit (surrogate halves are charged one each). */
function otherCost(c: number): number {
  if (c >= 0xd800 && c <= 0xdfff) return 1.2; // emoji and astral planes: ~2-3 tokens per pair
  if (c <= 0x024f) return 1.5; // Latin-1 / Latin Extended: accents break words into pieces
  if (c <= 0x052f) return 0.62; // Greek, Cyrillic: ~2 chars per token on cl100k
  if (c >= 0x2e80 && c <= 0x9fff) return 1.15; // CJK ideographs and kana: ~1 token per char
  if (c >= 0xac00 && c <= 0xd7af) return 1.1; // Hangul syllables
  if (c >= 0x2000 && c <= 0x206f) return 0.7; // general punctuation: dashes, quotes, ellipsis
  return 1;
}

/** Tokens of a run of ASCII letters: common words are one token, long identifiers split. */
function wordCost(len: number, upperInside: number): number {
  // camelCase/PascalCase humps usually start a new token; rarer long words split into pieces.
  return Math.max(1 + upperInside, len <= SHORT_WORD ? 1 : Math.ceil(len / WORD_CHARS));
}

/** Texts at least this long are memoised: history is re-estimated on every model call. */
const CACHE_MIN_CHARS = 32;
/** Bound on the characters the cache keeps alive (~8 MB of UTF-16). */
const CACHE_MAX_CHARS = 4_000_000;
const cache = new Map<string, number>();
let cachedChars = 0;

/** Default character-class token estimate of `s` (memoised for long texts). */
export function estimateTextTokens(s: string): number {
  if (s.length < CACHE_MIN_CHARS) return scan(s);
  const hit = cache.get(s);
  if (hit !== undefined) return hit;
  const t = scan(s);
  if (s.length > CACHE_MAX_CHARS / 8) return t;
  // Evict the oldest entries: Map iterates in insertion order.
  while (cachedChars + s.length > CACHE_MAX_CHARS) {
    const oldest = cache.keys().next().value as string;
    cache.delete(oldest);
    cachedChars -= oldest.length;
  }
  cache.set(s, t);
  cachedChars += s.length;
  return t;
}

function scan(s: string): number {
  let tokens = 0;
  let i = 0;
  const n = s.length;
  while (i < n) {
    const c = s.charCodeAt(i);
    const k = cls(c);
    if (k === LETTER) {
      // Letters and digits never share a pre-token in cl100k/o200k, so ids and hashes such as
      // 3f9a2c71 cost one token per letter/digit alternation; camelCase humps split words.
      let j = i + 1;
      let humps = 0;
      while (j < n) {
        const d = s.charCodeAt(j);
        if (cls(d) !== LETTER) break;
        if (d <= 90 && s.charCodeAt(j - 1) > 90) humps++;
        j++;
      }
      tokens += wordCost(j - i, humps);
      i = j;
    } else if (k === DIGIT) {
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === DIGIT) j++;
      tokens += Math.ceil((j - i) / 3);
      i = j;
    } else if (k === SPACE) {
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === SPACE) j++;
      // One space before a word is part of the word's token; indentation runs cost about one token.
      const next = j < n ? cls(s.charCodeAt(j)) : NEWLINE;
      if (j - i > 1 || next === NEWLINE || next === DIGIT) tokens += 1;
      i = j;
    } else if (k === NEWLINE) {
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === NEWLINE) j++;
      tokens += Math.ceil((j - i) / 2);
      i = j;
    } else if (k === PUNCT) {
      // Punctuation clusters (`":`, `");`, `=>`, `*/`) often merge into one token.
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === PUNCT) j++;
      const beforeWord = j < n && cls(s.charCodeAt(j)) === LETTER;
      // The last mark before a word is often part of the word's token (`.js`, `_fetch`, `"name`).
      tokens += beforeWord
        ? j - i === 1
          ? JOIN_COST
          : 1 + (j - i - 2) * PUNCT_RUN_EXTRA + JOIN_COST
        : 1 + (j - i - 1) * PUNCT_RUN_EXTRA;
      i = j;
    } else {
      tokens += otherCost(c);
      i++;
    }
  }
  return Math.ceil(tokens * SAFETY);
}

function contentTokens(text: (s: string) => number, content: ChatMessage["content"]): number {
  if (typeof content === "string") return text(content);
  let t = 0;
  for (const part of content) t += part.type === "text" ? text(part.text) : IMAGE_TOKENS;
  return t;
}

/** Builds an estimator from a text estimate, adding chat framing overhead. */
export function createTokenEstimator(text: (s: string) => number = estimateTextTokens): TokenEstimator {
  const message = (m: ChatMessage): number => {
    let t = MESSAGE_OVERHEAD_TOKENS + contentTokens(text, m.content);
    if (m.role === "assistant" && m.tool_calls)
      for (const call of m.tool_calls)
        t += TOOL_CALL_OVERHEAD_TOKENS + text(call.name) + text(call.arguments) + text(call.id) / 4;
    if (m.role === "tool" && m.name) t += text(m.name);
    return Math.ceil(t);
  };
  const memos = new WeakMap<ChatMessage, PrefixMemo>();
  return {
    text,
    message,
    messages: (ms) => {
      if (ms.length >= MEMO_MIN_MESSAGES) return PROMPT_OVERHEAD_TOKENS + memoSum(memos, message, ms);
      let t = PROMPT_OVERHEAD_TOKENS;
      for (const m of ms) t += message(m);
      return t;
    },
  };
}

/**
 * Prompts at least this long reuse the sums of their previous estimate: a long session is estimated
 * before every model call, and all but its last few messages are the very objects of the last turn.
 */
const MEMO_MIN_MESSAGES = 32;

/** The messages (after the first) of a prompt's last estimate and the sum of their estimates. */
interface PrefixMemo {
  objs: ChatMessage[];
  sum: number;
}

/**
 * `sum(message(m))` over `ms`, reusing the sum of the last prompt that had the same second message
 * (the first history message: the system message is a new object every turn) for as long as the two
 * prompts hold the same message objects: the messages after that point (the context note and the
 * newest message, typically) are taken off the old sum and the new ones added. Exact: per-message
 * estimates are integers, and messages are never modified once built (the same object always has
 * the same estimate).
 */
function memoSum(
  memos: WeakMap<ChatMessage, PrefixMemo>,
  message: (m: ChatMessage) => number,
  ms: readonly ChatMessage[],
): number {
  const key = ms[1]!;
  let memo = memos.get(key);
  if (!memo) {
    memo = { objs: [], sum: 0 };
    memos.set(key, memo);
  }
  const objs = memo.objs;
  const limit = Math.min(objs.length, ms.length - 1);
  let k = 0;
  while (k < limit && objs[k] === ms[k + 1]) k++;
  let acc = memo.sum;
  if (objs.length - k > k) {
    // Less than half in common: summing the common part afresh is cheaper than taking the rest off.
    acc = 0;
    for (let i = 0; i < k; i++) acc += message(objs[i]!);
  } else for (let i = k; i < objs.length; i++) acc -= message(objs[i]!);
  objs.length = k;
  for (let i = k + 1; i < ms.length; i++) {
    const m = ms[i]!;
    acc += message(m);
    objs.push(m);
  }
  memo.sum = acc;
  return message(ms[0]!) + acc;
}

/** The default conservative estimator. */
export const defaultTokenEstimator: TokenEstimator = createTokenEstimator();
