/**
 * The waits and detours of a turn as spans of its trace, so the console's timeline shows where the
 * time went besides model and tool calls: a wait for the owner's approval (from the question to the
 * decision), a model attempt that failed and was retried or fell back, and a compaction.
 *
 * Invariants: an approval span is opened before the question is sent and closed with the decision
 * (approved, denied, expired) whatever happens, a throw included (then status `error`); its detail
 * holds the question's kind, its first {@link SUMMARY_MAX} characters, the decision, the reason and
 * the chat that answered: never more than the owner was shown.
 */
import { performance } from "node:perf_hooks";
import type { ApprovalAnswer, ApprovalDecision, ApprovalRequest } from "../tools/tool.js";
import type { ModelRetry } from "../models/types.js";
import { withoutAddresses } from "../core/public-text.js";
import type { TraceRecorder } from "./trace.js";

/** Characters of an approval's summary (the shell command) kept in the trace. */
export const SUMMARY_MAX = 240;

/** Where a turn's spans hang in the call tree. */
export interface SpanBase {
  requestId: string;
  rootRequestId: string;
  depth: number;
  sessionId: string | null;
  agentId: string | null;
}

/** Asks the owner; what `AgentHostDeps.requestApproval` returns (a bare decision or one with why). */
export type AskOwner = () => Promise<ApprovalDecision | ApprovalAnswer>;

/** A decision with its reason, from either form. */
export function answerOf(a: ApprovalDecision | ApprovalAnswer): ApprovalAnswer {
  return typeof a === "string" ? { decision: a } : a;
}

/** Wraps one approval question in an `approval` span; resolves with the bare decision. */
export async function tracedApproval(
  traces: TraceRecorder,
  base: SpanBase,
  req: ApprovalRequest,
  ask: AskOwner,
): Promise<ApprovalDecision> {
  const id = traces.start({ ...base, parentRequestId: null, kind: "approval", name: req.kind });
  const summary = req.summary.length > SUMMARY_MAX ? `${req.summary.slice(0, SUMMARY_MAX)}…` : req.summary;
  let answer: ApprovalAnswer;
  try {
    answer = answerOf(await ask());
  } catch (err) {
    traces.end(id, "error", { kind: req.kind, summary, decision: "error", reason: (err as Error).message });
    throw err;
  }
  traces.end(id, answer.decision, {
    kind: req.kind,
    summary,
    decision: answer.decision,
    ...(answer.reason ? { reason: answer.reason } : {}),
    ...(answer.via ? { via: answer.via } : {}),
  });
  return answer.decision;
}

/** Records a failed model attempt as a `retry` span, from the attempt's start to the next one. */
export function traceRetry(traces: TraceRecorder, base: SpanBase, r: ModelRetry): void {
  traces.point({
    requestId: base.requestId,
    rootRequestId: base.rootRequestId,
    depth: base.depth,
    kind: "retry",
    name: r.model,
    meta: {
      model: r.model,
      code: r.code,
      // As a failed turn's stored cause: no upstream URL (trace-wire.ts readers are API clients too).
      message: withoutAddresses(r.message),
      attempt: r.attempt,
      next: r.next,
      wait_ms: r.waitMs,
      ...(r.fallback ? { fallback: r.fallback } : {}),
    },
    durationMs: r.durationMs,
  });
}

/**
 * Runs one compaction hook and, when it compacted (returned messages), records a `compaction` span
 * over the time it took; a hook that found nothing to do leaves no trace.
 */
export async function tracedCompaction<T>(
  traces: TraceRecorder,
  base: SpanBase,
  trigger: "threshold" | "overflow",
  messagesBefore: number,
  run: () => Promise<T[] | undefined>,
): Promise<T[] | undefined> {
  const t0 = performance.now();
  const out = await run();
  if (out)
    traces.point({
      requestId: base.requestId,
      rootRequestId: base.rootRequestId,
      depth: base.depth,
      kind: "compaction",
      name: trigger === "overflow" ? "after a context overflow" : "history over the threshold",
      meta: { trigger, messages_before: messagesBefore, messages_after: out.length },
      durationMs: Math.max(0, performance.now() - t0),
    });
  return out;
}
