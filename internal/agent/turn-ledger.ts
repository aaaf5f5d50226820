/**
 * The ledger rows of one turn's model calls: each with its cause (call-cause.ts), its figure
 * (models/call-cost.ts, decided once by the recorder) and who pays; and the rows of failed attempts
 * the provider had already counted (billed retries, a stream that broke after its usage arrived),
 * which are committed at once with a trace point of their own.
 */
import type { InboundMessage } from "../core/host.js";
import { addUsage } from "../core/usage.js";
import type { Config } from "../config/schema.js";
import { ESTIMATED_SOURCES, priceCall, type PricedCall } from "../models/call-cost.js";
import type { BilledAttempt, Usage } from "../models/types.js";
import type { Payer } from "../budgets/spend.js";
import { causeOf } from "./call-cause.js";
import type { UsageRecord } from "./host-types.js";
import type { TracePoint } from "./usage-writer.js";

/** What the ledger of a turn needs from it. */
export interface TurnLedgerDeps {
  cfg: Config;
  msg: InboundMessage;
  agentId: string;
  depth: number;
  requestId: string;
  rootId: string;
  payer: Payer;
  /** The call tree's totals (SSE `done`, headers), when the turn keeps them. */
  tree: { usage: Usage; cost: number; estimatedCalls: number } | undefined;
  /** The session written to now (a compaction moves it). */
  sessionId: () => string | null;
  /** Commits a row with its trace point (the recorder's commit). */
  commit: (c: { rec: UsageRecord; point: TracePoint }) => void;
  logError: (err: unknown) => void;
}

/** Builds the rows of one turn's calls. */
export function createTurnLedger(d: TurnLedgerDeps): {
  row: (
    provider: string,
    model: string,
    usage: Usage,
    priced: PricedCall,
    callId: string | undefined,
  ) => UsageRecord;
  onBilled: (b: BilledAttempt) => void;
} {
  const { msg, payer } = d;
  // Which model call of this turn comes next: the first answers the message, later ones follow tools.
  let callIndex = 0;
  const build = (
    provider: string,
    model: string,
    usage: Usage,
    priced: PricedCall,
    callId: string | undefined,
    kind: string | undefined,
  ): UsageRecord => {
    const cause = causeOf(msg, d.depth, callIndex);
    return {
      sessionId: d.sessionId(),
      sessionKey: msg.ephemeral ? null : msg.sessionKey,
      agentId: d.agentId,
      provider,
      model,
      requestId: d.requestId,
      usage,
      cost: priced.cost,
      costSource: priced.source,
      kind: kind ?? cause.kind,
      jobId: cause.jobId,
      callId: callId ?? null,
      channel: payer.channel,
      payerAgent: payer.agentId,
      payerSession: payer.sessionKey,
    };
  };
  return {
    row: (provider, model, usage, priced, callId) => {
      const rec = build(provider, model, usage, priced, callId, undefined);
      callIndex++;
      return rec;
    },
    onBilled: (b) => {
      const priced = priceCall(d.cfg, {
        provider: b.provider,
        model: b.model,
        usage: b.usage,
        reported: b.cost,
        estimatedUsage: b.estimated,
      });
      if (d.tree) {
        d.tree.usage = addUsage(d.tree.usage, b.usage);
        d.tree.cost += priced.cost;
        if (ESTIMATED_SOURCES.includes(priced.source)) d.tree.estimatedCalls++;
      }
      try {
        d.commit({
          rec: build(b.provider, b.model, b.usage, priced, b.callId, "failed"),
          point: {
            requestId: d.requestId,
            rootRequestId: d.rootId,
            depth: d.depth,
            kind: "model",
            name: `${b.provider}/${b.model}`,
            meta: { ...b.usage, cost: priced.cost, costSource: priced.source, failed: b.code },
          },
        });
      } catch (err) {
        d.logError(err);
      }
    },
  };
}
