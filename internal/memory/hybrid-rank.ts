/**
 * Fusion of keyword and vector rankings by reciprocal rank fusion (Cormack et al. 2009): each list
 * adds `1 / (RRF_K + rank)` for the chunks it returned, so neither bm25 nor cosine scores need to be
 * calibrated against each other. Dated chunks (daily notes, transcript turns) then get a recency
 * boost that halves every `halfLifeDays`; undated ones (MEMORY.md, lasting facts) get the full boost.
 */

/** The usual RRF constant: damps the weight of the very first ranks. */
export const RRF_K = 60;
/**
 * At most this much extra score (as a fraction) for a chunk dated today. Kept small: between RRF
 * ranks 1 and 7 the score differs by about 10%, so recency reorders near-equals, not relevance.
 */
export const RECENCY_WEIGHT = 0.1;

/** One fused candidate. */
export interface FusedHit {
  id: number;
  score: number;
  keywordRank?: number;
  vectorRank?: number;
}

/** Fuses ranked id lists (best first) into one list (best first). */
export function reciprocalRankFusion(keyword: number[], vector: number[]): FusedHit[] {
  const byId = new Map<number, FusedHit>();
  const add = (ids: number[], key: "keywordRank" | "vectorRank"): void =>
    ids.forEach((id, i) => {
      const h = byId.get(id) ?? { id, score: 0 };
      if (h[key] !== undefined) return;
      h[key] = i + 1;
      h.score += 1 / (RRF_K + i + 1);
      byId.set(id, h);
    });
  add(keyword, "keywordRank");
  add(vector, "vectorRank");
  return [...byId.values()].sort((a, b) => b.score - a.score || a.id - b.id);
}

/**
 * Multiplier for a chunk dated `day` (YYYY-MM-DD) seen at `now`. Undated chunks (MEMORY.md) hold
 * lasting facts, which are current by definition: they get the full boost, so only old daily notes
 * and turns sink, and a recent note never outranks a better-matching fact.
 */
export function recencyFactor(day: string | null | undefined, now: number, halfLifeDays: number): number {
  if (!day) return 1 + RECENCY_WEIGHT;
  const t = Date.parse(`${day}T12:00:00Z`);
  if (Number.isNaN(t)) return 1;
  const ageDays = Math.max(0, (now - t) / 86_400_000);
  return 1 + RECENCY_WEIGHT * 0.5 ** (ageDays / halfLifeDays);
}
