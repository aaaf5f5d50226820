/**
 * Wires budgets into the daemon: the guard (with warnings delivered to `budgets.warn_target`), the
 * metered model for compaction summaries, and the unpriced-model warning at start and on reload.
 */
import type { CoreContext } from "../runtime/context.js";
import type { ModelClient, Usage } from "../models/types.js";
import { BudgetGuard } from "./budget-guard.js";
import { meteredModel } from "./metered-model.js";
import { unpricedWarning } from "./unpriced.js";

/** Where compaction calls' usage is recorded (the daemon's UsageTracker). */
export interface UsageSink {
  record(input: {
    sessionKey: string | null;
    agentId: string | null;
    provider: string;
    model: string;
    requestId: string;
    sessionId?: string | null;
    usage: Usage;
    channel: string | null;
    payerAgent: string | null;
    payerSession: string | null;
    /** The provider's own figure (USD), priced by the ledger's rule when absent. */
    cost?: number | null;
    estimated?: boolean;
    kind?: string;
    callId?: string | null;
  }): unknown;
}

/** What the agent host section gets. */
export interface Budgets {
  guard: BudgetGuard;
  /** `model` with compaction calls checked and recorded against the current payer. */
  compactionModel(model: ModelClient): ModelClient;
}

/** Builds the guard and logs the unpriced-model warning now and after each reload. */
export function createBudgets(
  ctx: CoreContext,
  deps: { usage: UsageSink; deliver: (target: string, text: string) => Promise<void> },
): Budgets {
  const log = ctx.logger.child({ module: "budgets" });
  const guard = new BudgetGuard({
    db: ctx.db,
    config: () => ctx.config(),
    now: () => ctx.clock.now(),
    warn: deps.deliver,
    log: (fields, msg) => log.warn(fields, msg),
  });
  let lastWarning: string | undefined;
  const checkPrices = (): void => {
    const w = unpricedWarning(ctx.config());
    if (w && w !== lastWarning) log.warn(w);
    lastWarning = w;
  };
  checkPrices();
  ctx.onConfig(() => checkPrices());
  return {
    guard,
    compactionModel: (model) =>
      meteredModel({
        model,
        config: () => ctx.config(),
        guard,
        purpose: "compaction",
        record: (r) => {
          try {
            deps.usage.record({
              sessionKey: r.payer?.sessionKey ?? null,
              agentId: r.payer?.agentId ?? null,
              provider: r.provider,
              model: r.model,
              // The turn that needed it; a `/compact` has none and is named by its purpose.
              requestId: r.payer?.requestId ?? r.purpose,
              sessionId: r.payer?.sessionId ?? null,
              usage: r.usage,
              channel: r.payer?.channel ?? null,
              payerAgent: r.payer?.agentId ?? null,
              payerSession: r.payer?.sessionKey ?? null,
              ...(r.bill?.cost !== undefined ? { cost: r.bill.cost } : {}),
              ...(r.bill?.estimated ? { estimated: true } : {}),
              ...(r.bill?.callId ? { callId: r.bill.callId } : {}),
              kind: r.failed ? "failed" : r.purpose,
            });
          } catch (err) {
            log.error({ err: (err as Error).message }, "could not record a compaction call's usage");
          }
        },
      }),
  };
}
