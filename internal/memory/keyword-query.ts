/** FTS5 query building for memory keyword search. */

/**
 * Question words that FTS5 (which has no stop list) would otherwise match everywhere: "what car do I
 * drive" must not rank every note containing "I" or "do". Dropped unless the query has nothing else.
 */
const STOP_WORDS = new Set(
  "a an and are as at be by did do does for from had has have how i in is it its me my of on or our so that the their them there these they this to was we were what when where which who whom why will with you your".split(
    " ",
  ),
);

/** Builds an FTS5 MATCH expression from free text (each word quoted, so no syntax errors). */
export function ftsQuery(text: string, op: "AND" | "OR"): string | undefined {
  const all = text.match(/[\p{L}\p{N}_]+/gu)?.slice(0, 24) ?? [];
  const content = all.filter((w) => !STOP_WORDS.has(w.toLowerCase()));
  const words = content.length > 0 ? content : all;
  if (words.length === 0) return undefined;
  return words.map((w) => `"${w.replace(/"/g, "")}"`).join(` ${op} `);
}
