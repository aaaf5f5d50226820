/**
 * The memory index's embedding calls in the ledger: one row per call (`embedding_index` while
 * indexing, `embedding_search` for a query), priced per token by the ledger's rule, and checked
 * against the budgets before the call is made, because its cost is known in advance (the texts are
 * there to count). Embeddings run for no chat turn, so they are paid overall (agent "memory").
 */
import type { CoreContext } from "../runtime/context.js";
import type { UsageRecordInput } from "../agent/usage/usage-tracker.js";
import type { CostSource } from "../models/call-cost.js";
import { estimateTokens } from "../models/call-cost.js";
import { BudgetGuard } from "../budgets/budget-guard.js";
import type { Payer } from "../budgets/spend.js";
import type { EmbedderOptions } from "../memory/embedder.js";

/** The ledger as embeddings use it (the daemon's UsageTracker). */
export interface EmbeddingUsage {
  record(input: UsageRecordInput): unknown;
  price(input: UsageRecordInput): { cost: number; source: CostSource };
}

/** Who pays for embeddings: no turn, so the overall (and the "memory" agent's) limits. */
const MEMORY_PAYER: Payer = { agentId: "memory", channel: "memory", sessionKey: null };

/** The memory index's `onUsage` and `beforeEmbed`. */
export function embeddingLedger(
  ctx: CoreContext,
  usage: EmbeddingUsage,
): {
  onUsage: NonNullable<EmbedderOptions["onUsage"]>;
  beforeEmbed: NonNullable<EmbedderOptions["beforeCall"]>;
} {
  const guard = new BudgetGuard({
    db: ctx.db,
    config: () => ctx.config(),
    now: () => ctx.clock.now(),
    log: (fields, msg) => ctx.logger.warn({ module: "budgets", ...fields }, msg),
  });
  const tokens = (n: number): UsageRecordInput["usage"] => ({
    input: n,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    total: n,
  });
  return {
    onUsage: (provider, model, n, purpose, cause) =>
      usage.record({
        provider,
        model,
        // A search a tool ran names its turn; indexing has none (agent "memory").
        agentId: cause?.agentId ?? "memory",
        requestId: cause?.requestId ?? null,
        sessionKey: cause?.sessionKey ?? null,
        usage: tokens(n),
        kind: `embedding_${purpose}`,
        channel: MEMORY_PAYER.channel,
        payerAgent: MEMORY_PAYER.agentId,
      }),
    beforeEmbed: (provider, model, texts) => {
      const n = estimateTokens(texts.reduce((a, t) => a + t.length, 0));
      const block = guard.check(MEMORY_PAYER, () => ({
        usd: usage.price({ provider, model, usage: tokens(n) }).cost,
        tokens: n,
      }));
      return block?.notice;
    },
  };
}
