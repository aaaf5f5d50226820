/**
 * The log of one turn: debug lines at each stage (start, each model call, each tool call) and one
 * concise info line at the end, so the log answers "did my message arrive, which model answered,
 * how long did it take, what did it cost" without raising the level.
 *
 * Durations are wall-clock (performance.now), not the injected clock: they describe the process.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "../log/logger.js";
import { formatUsd } from "../core/money.js";
import type { Usage } from "../models/types.js";

/** Who a turn is for. */
export interface TurnLogBase {
  runId: string;
  requestId: string;
  channel: string;
  session: string;
  agent: string;
}

/** How a turn ended, as the info line reports it. */
export interface TurnLogEnd {
  finishReason: string;
  usage: Usage;
  model?: string | undefined;
  error?: { code: string; message: string } | undefined;
  depth?: number;
}

/** Collects one turn's facts and writes its log lines. */
export class TurnLog {
  private readonly t0 = performance.now();
  private cost = 0;
  /** Some call had no price and counts at budgets.default_price. */
  private estimated = false;
  private modelCalls = 0;
  private toolCalls = 0;

  constructor(
    private readonly logger: Logger,
    private readonly base: TurnLogBase,
  ) {}

  /** The turn starts running (after waiting in its session's queue). */
  start(detail: { model?: string | undefined; history: number; tools: number }): void {
    this.logger.debug(
      { ...this.base, model: detail.model ?? "(default)", history: detail.history, tools: detail.tools },
      `turn start: ${this.base.channel} ${this.base.session} agent ${this.base.agent}`,
    );
  }

  /** One model call finished with this usage; `estimated`: its cost is at budgets.default_price. */
  modelCall(provider: string, model: string, usage: Usage, cost: number, estimated = false): void {
    this.modelCalls++;
    this.cost += cost;
    if (estimated) this.estimated = true;
    this.logger.debug(
      {
        runId: this.base.runId,
        model: `${provider}/${model}`,
        input: usage.input,
        output: usage.output,
        cost,
      },
      `model call ${provider}/${model}: ${usage.input} in, ${usage.output} out tokens`,
    );
  }

  /** One tool call finished. */
  toolCall(name: string, ok: boolean, ms: number): void {
    this.toolCalls++;
    this.logger.debug(
      { runId: this.base.runId, tool: name, ok, ms: Math.round(ms) },
      `tool ${name} ${ok ? "ok" : "failed"} in ${Math.round(ms)} ms`,
    );
  }

  /** The one info line per turn (warn when it failed). */
  end(out: TurnLogEnd): void {
    const ms = Math.round(performance.now() - this.t0);
    const outcome = out.error ? `error ${out.error.code}` : out.finishReason;
    const cost = formatUsd(this.cost, this.estimated);
    const fields = {
      ...this.base,
      model: out.model ?? null,
      input: out.usage.input,
      output: out.usage.output,
      cost: Number(this.cost.toFixed(6)),
      ...(this.estimated ? { costEstimated: true } : {}),
      ms,
      outcome,
      modelCalls: this.modelCalls,
      toolCalls: this.toolCalls,
      ...(out.depth ? { depth: out.depth } : {}),
    };
    const line =
      `turn ${this.base.channel} ${this.base.session} agent ${this.base.agent} ` +
      `model ${out.model ?? "-"}: ${out.usage.input} in + ${out.usage.output} out tokens, ${cost}, ` +
      `${(ms / 1000).toFixed(2)} s, ${outcome}`;
    if (out.error) this.logger.warn({ ...fields, error: out.error.message }, line);
    else this.logger.info(fields, line);
  }
}
