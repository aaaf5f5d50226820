/**
 * A ModelClient for work a turn causes outside its own loop (compaction summaries): each call is
 * checked against the current payer's budget before it is made, and its usage is recorded against
 * that payer afterwards, so a compaction counts against the turn that needed it.
 */
import type { Config } from "../config/schema.js";
import type { CallBill, ModelClient, ModelRequest, ModelStreamEvent, Usage } from "../models/types.js";
import type { BudgetGuard } from "./budget-guard.js";
import { currentPayer } from "./payer-scope.js";
import { projectCall } from "./projection.js";
import type { Payer } from "./spend.js";

/** A call refused by a budget (a typed error the summariser reports and falls back on). */
export class BudgetExceededError extends Error {
  readonly code = "BUDGET_EXCEEDED";
  constructor(message: string) {
    super(message);
    this.name = "BudgetExceededError";
  }
}

export interface MeteredModelOptions {
  model: ModelClient;
  config: () => Config;
  guard: Pick<BudgetGuard, "check" | "recorded">;
  /** Records one call's usage for `payer` (the usage tracker). */
  record: (r: {
    payer: Payer | undefined;
    provider: string;
    model: string;
    usage: Usage;
    purpose: string;
    /** The provider's figure, estimate mark and call id; `failed` for a billed failed attempt. */
    bill?: CallBill;
    failed?: boolean;
  }) => void;
  /** What the calls are for, e.g. `compaction` (stored as the usage row's request id prefix). */
  purpose: string;
}

/** Wraps `model` so calls are budget-checked and recorded. */
export function meteredModel(opts: MeteredModelOptions): ModelClient {
  return {
    async *stream(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const payer = currentPayer();
      if (payer) {
        const block = opts.guard.check(payer, () =>
          projectCall(opts.config(), req.model, req.messages, req.tools, req.maxTokens),
        );
        if (block) throw new BudgetExceededError(block.notice);
      }
      let usage: Usage | undefined;
      let bill: CallBill = {};
      const billed: ModelRequest = {
        ...req,
        // A failed attempt the provider counted is paid by the same payer.
        onBilled: (b) => {
          req.onBilled?.(b);
          const { provider, model, usage: u, code: _code, ...rest } = b;
          opts.record({ payer, provider, model, usage: u, purpose: opts.purpose, bill: rest, failed: true });
        },
      };
      for await (const ev of opts.model.stream(billed)) {
        if (ev.type === "usage") {
          usage = ev.usage;
          bill = {
            ...(ev.cost !== undefined ? { cost: ev.cost } : {}),
            ...(ev.estimated ? { estimated: true } : {}),
            ...(ev.callId ? { callId: ev.callId } : {}),
          };
        }
        if (ev.type === "done" && usage) {
          opts.record({ payer, provider: ev.provider, model: ev.model, usage, purpose: opts.purpose, bill });
          if (payer) opts.guard.recorded(payer);
        }
        yield ev;
      }
    },
  };
}
