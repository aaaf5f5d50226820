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

const enum C {
  Letter,
  Digit,
  Space,
  Newline,
  Punct,
  Other,
}

function cls(c: number): C {
  if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90)) return C.Letter;
  if (c >= 48 && c <= 57) return C.Digit;
  if (c === 32 || c === 9) return C.Space;
  if (c === 10 || c === 13) return C.Newline;
  if (c < 128) return C.Punct;
  return C.Other;
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

/** Default character-class token estimate of `s`. */
export function estimateTextTokens(s: string): number {
  let tokens = 0;
  let i = 0;
  const n = s.length;
  while (i < n) {
    const c = s.charCodeAt(i);
    const k = cls(c);
    if (k === C.Letter) {
      // Letters and digits never share a pre-token in cl100k/o200k, so ids and hashes such as
      // 3f9a2c71 cost one token per letter/digit alternation; camelCase humps split words.
      let j = i + 1;
      let humps = 0;
      while (j < n) {
        const d = s.charCodeAt(j);
        if (cls(d) !== C.Letter) break;
        if (d <= 90 && s.charCodeAt(j - 1) > 90) humps++;
        j++;
      }
      tokens += wordCost(j - i, humps);
      i = j;
    } else if (k === C.Digit) {
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === C.Digit) j++;
      tokens += Math.ceil((j - i) / 3);
      i = j;
    } else if (k === C.Space) {
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === C.Space) j++;
      // One space before a word is part of the word's token; indentation runs cost about one token.
      const next = j < n ? cls(s.charCodeAt(j)) : C.Newline;
      if (j - i > 1 || next === C.Newline || next === C.Digit) tokens += 1;
      i = j;
    } else if (k === C.Newline) {
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === C.Newline) j++;
      tokens += Math.ceil((j - i) / 2);
      i = j;
    } else if (k === C.Punct) {
      // Punctuation clusters (`":`, `");`, `=>`, `*/`) often merge into one token.
      let j = i + 1;
      while (j < n && cls(s.charCodeAt(j)) === C.Punct) j++;
      const beforeWord = j < n && cls(s.charCodeAt(j)) === C.Letter;
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
  return {
    text,
    message,
    messages: (ms) => {
      let t = PROMPT_OVERHEAD_TOKENS;
      for (const m of ms) t += message(m);
      return t;
    },
  };
}

/** The default conservative estimator. */
export const defaultTokenEstimator: TokenEstimator = createTokenEstimator();
