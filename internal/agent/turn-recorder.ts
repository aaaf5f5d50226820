/**
 * What a turn writes down as it runs: every assistant message and tool result into the session, one
 * usage row and one trace point per model call, a trace span per tool call, and the final answer when
 * the loop did not store it. The loop only calls hooks; this file is where they land in the store.
 *
 * Durability (the whole table: docs/architecture.md, "What each commit makes durable"): a model
 * call's usage row and trace point ride in the commit of that call's answer (assistant message), so
 * a kill -9 leaves both or neither: never an answer whose cost the budgets cannot see, never a cost
 * without its answer. The answer is committed before the turn ends and is delivered, so it is never
 * answered twice. Should that commit fail (disk full), the usage is still committed on its own.
 *
 * Over 300 lines on purpose: the hooks share one commit discipline (what rides in which commit), and
 * splitting them would spread that invariant over files that each hold half of it.
 */
import { performance } from "node:perf_hooks";
import { withoutAddresses } from "../core/public-text.js";
import type { InboundMessage } from "../core/host.js";
import type { TurnLog } from "./turn-log.js";
import type { AgentEvent } from "../core/agent-events.js";
import { addUsage } from "../core/usage.js";
import type { CoreContext } from "../runtime/context.js";
import type { ChatMessage, Usage } from "../models/types.js";
import type { SessionRow, SessionStore } from "../session/session-store.js";
import { storeFailure } from "../store/db.js";
import type { AgentDef } from "./agents.js";
import { ESTIMATED_SOURCES, priceCall } from "../models/call-cost.js";
import { createTurnLedger } from "./turn-ledger.js";
import type { HostBudget, HostCompactor, UsageRecord } from "./host-types.js";
import type { ToolSet } from "../tools/tool.js";
import type { Payer } from "../budgets/spend.js";
import { withPayer } from "../budgets/payer-scope.js";
import { projectCall } from "../budgets/projection.js";
import type { LoopHooks, LoopOutcome } from "./loop.js";
import type { TraceRecorder } from "./trace.js";
import type { TracePoint, UsageWriter } from "./usage-writer.js";
import { traceRetry, tracedCompaction, type SpanBase } from "./trace-spans.js";

/** A compactor's `void` (nothing to do) as undefined. */
const orNone = <T>(v: T[] | void | undefined): T[] | undefined => v ?? undefined;

export { UsageWriter } from "./usage-writer.js";

/** Usage, cost and calls summed over a turn's whole call tree (subagents included). */
export interface TreeAcc {
  usage: Usage;
  /** USD; calls of a model without a price count at budgets.default_price (`estimatedCalls`). */
  cost: number;
  subCalls: number;
  estimatedCalls: number;
}

/** A model call's usage row and trace point, not yet written. */
interface PendingCall {
  rec: UsageRecord;
  point: TracePoint;
}

/** Everything the recording hooks of one turn need. */
export interface RecorderTurn {
  ctx: CoreContext;
  sessions: SessionStore;
  traces: TraceRecorder;
  usage: UsageWriter;
  compactor: HostCompactor | undefined;
  budget: HostBudget | undefined;
  msg: InboundMessage;
  agent: AgentDef;
  runId: string;
  requestId: string;
  rootId: string;
  depth: number;
  sessionId: string;
  liveSession: SessionRow | undefined;
  tree: TreeAcc | undefined;
  modelRef: string | undefined;
  /** The system message as sent (compaction keeps it). */
  system: string;
  /** Re-adds the volatile note to messages a compaction returned. */
  noted: (m: ChatMessage[]) => ChatMessage[];
  /** The turn's tools, for the budget's projection of a call. */
  tools: ToolSet;
  /** The turn's log lines (each model and tool call). */
  turnLog: TurnLog;
  /** Who pays for this turn's model calls. */
  payer: Payer;
  emit: (e: AgentEvent) => void;
}

/** The loop hooks of one turn and what they recorded (the session written to, the final message). */
export interface TurnRecorder {
  hooks: LoopHooks;
  /** The session the turn writes to (a compaction moves it to the successor). */
  session(): SessionRow | undefined;
  /** Id of the stored final answer, once stored. */
  finalStored(): number | undefined;
  /** Stores the outcome's text when the loop did not (errors, aborts, engines); never throws for disk. */
  storeFinal(outcome: LoopOutcome): LoopOutcome;
}

/** Builds the hooks that record one turn. */
export function createTurnRecorder(t: RecorderTurn): TurnRecorder {
  const { ctx, sessions, traces, msg, agent, requestId, rootId, depth, sessionId, tree } = t;
  const cfg = ctx.config();
  let finalStored: number | undefined;
  let persistSession = t.liveSession;
  const { payer } = t;
  const budget = t.budget;
  // A model call whose usage waits for its answer's commit (see onUsage).
  let pendingCall: PendingCall | undefined;
  const spanBase: SpanBase = {
    requestId,
    rootRequestId: rootId,
    depth,
    sessionId: sessionId || null,
    agentId: agent.id,
  };
  // When the last retry or compaction of the current model call ended: the call's bar starts there,
  // so it does not lie over the detours drawn as their own bars.
  let detourEnd: number | undefined;
  const answeringMs = (ms: number): number => {
    const since = detourEnd === undefined ? ms : Math.min(ms, performance.now() - detourEnd);
    detourEnd = undefined;
    return since;
  };
  // The ledger rows of this turn's calls (their cause, their figure), and its billed failures.
  const ledger = createTurnLedger({
    cfg,
    msg,
    agentId: agent.id,
    depth,
    requestId,
    rootId,
    payer,
    tree,
    sessionId: () => persistSession?.id ?? null,
    commit: (c) => commitCall(c),
    logError: (err) =>
      ctx.logger.error({ err: (err as Error).message, runId: t.runId }, "failed to record usage"),
  });
  const commitCall = (c: PendingCall): void => {
    t.usage.recordModelCall(c.rec, c.point);
    budget?.recorded(payer);
  };
  const hooks: LoopHooks = {
    gate: (msgs) => {
      const block = budget?.check(payer, () =>
        projectCall(cfg, t.modelRef, msgs, t.tools.specs(), agent.max_tokens),
      );
      return block ? { code: "BUDGET_EXCEEDED", message: block.notice } : undefined;
    },
    onAssistantMessage: (m) => {
      const call = pendingCall;
      pendingCall = undefined;
      if (!persistSession) {
        if (call) commitCall(call);
        return;
      }
      const sid = persistSession.id;
      const append = (): number =>
        sessions.append(sid, {
          role: "assistant",
          content: m.content,
          toolCalls: m.toolCalls,
          ...(m.model ? { model: m.model } : {}),
          finishReason: m.finishReason,
          ...(m.usage ? { usage: m.usage } : {}),
          requestId,
        });
      // The answer, its usage row and trace point in one commit (see "Durability" in the file header).
      if (!call) {
        const id = append();
        if (m.toolCalls.length === 0) finalStored = id;
        return;
      }
      let id: number;
      try {
        id = t.usage.recordModelCallWith(call.rec, call.point, append);
      } catch (err) {
        // The usage was recorded on its own (recordModelCallWith): the budget still hears of it.
        try {
          budget?.recorded(payer);
        } catch {
          // The store failure that matters is `err`.
        }
        throw err;
      }
      budget?.recorded(payer);
      if (m.toolCalls.length === 0) finalStored = id;
    },
    onToolResult: (m) => {
      if (!persistSession) return;
      sessions.append(persistSession.id, {
        role: "tool",
        content: m.content,
        toolCallId: m.callId,
        toolName: m.name,
        status: m.isError ? "error" : "ok",
        requestId,
      });
    },
    onUsage: (u) => {
      // The one figure (models/call-cost.ts), made once here: the ledger stores it, and the turn's
      // totals (SSE `done`, headers), its log line and its trace point show this same figure.
      const priced = priceCall(cfg, {
        provider: u.provider,
        model: u.model,
        usage: u.usage,
        reported: u.cost,
        estimatedUsage: u.estimated,
      });
      const estimated = ESTIMATED_SOURCES.includes(priced.source);
      const counted = priced.cost;
      t.turnLog.modelCall(u.provider, u.model, u.usage, counted, estimated);
      const rec = ledger.row(u.provider, u.model, u.usage, priced, u.callId);
      if (tree) {
        tree.usage = addUsage(tree.usage, u.usage);
        tree.cost += counted;
        if (estimated) tree.estimatedCalls++;
        tree.subCalls++;
      }
      const point: TracePoint = {
        requestId,
        rootRequestId: rootId,
        depth,
        kind: "model",
        name: `${u.provider}/${u.model}`,
        // Usage plus, for the console's timeline and token breakdown, where the prompt went.
        meta: {
          ...u.usage,
          cost: counted,
          costSource: priced.source,
          ...(u.prompt ? { prompt: u.prompt } : {}),
          ...(u.overflowRetries ? { overflowRetries: u.overflowRetries } : {}),
          ...(u.compacted ? { compacted: true } : {}),
        },
        ...(u.durationMs !== undefined ? { durationMs: answeringMs(u.durationMs) } : {}),
      };
      // The loop reports the call's answer right after, in the same synchronous run: both are written
      // in that answer's commit. Never held across an await: what no answer claimed by the end of this
      // run (an engine that stores its answer later, or none) commits on its own in a microtask.
      if (pendingCall) commitCall(pendingCall);
      const call = { rec, point };
      pendingCall = call;
      queueMicrotask(() => {
        if (pendingCall !== call) return;
        pendingCall = undefined;
        try {
          commitCall(call);
        } catch (err) {
          ctx.logger.error({ err: (err as Error).message, runId: t.runId }, "failed to record usage");
        }
      });
    },
    onBilled: ledger.onBilled,
    onModelRetry: (r) => {
      traceRetry(traces, spanBase, r);
      detourEnd = performance.now();
    },
    onToolCall: async (call, run) => {
      const id = traces.start({
        requestId,
        parentRequestId: msg.parentRequestId ?? null,
        rootRequestId: rootId,
        depth,
        kind: "tool",
        name: call.name,
        sessionId: sessionId || null,
        agentId: agent.id,
      });
      if (tree) tree.subCalls++;
      const t0 = performance.now();
      const r = await run();
      t.turnLog.toolCall(call.name, !r.isError, performance.now() - t0);
      traces.end(id, r.isError ? "error" : "ok");
      return r;
    },
  };
  const compactor = t.compactor;
  const live = t.liveSession;
  if (compactor && live) {
    const args = { agent, modelRef: t.modelRef, system: t.system, runId: t.runId, emit: t.emit };
    const current = (): SessionRow => sessions.get(persistSession?.id ?? sessionId) ?? live;
    const moved = (out: ChatMessage[] | void | undefined): ChatMessage[] | undefined => {
      if (!out) return undefined;
      persistSession = sessions.head(msg.sessionKey) ?? persistSession;
      return t.noted(out);
    };
    // Compaction calls are paid by this turn's payer (payer scope) and name this turn and its
    // session in the ledger; one that compacted is a span. The session is read once per hook call
    // (before every model call: a second read was a second query per call).
    const causedBy = (session: SessionRow): Payer => ({ ...payer, requestId, sessionId: session.id });
    hooks.beforeModelCall = async (msgs) => {
      const session = current();
      return moved(
        await tracedCompaction(traces, spanBase, "threshold", msgs.length, async () =>
          orNone(
            await withPayer(causedBy(session), () =>
              compactor.beforeModelCall({ ...args, session, messages: msgs }),
            ),
          ),
        ),
      );
    };
    hooks.onContextOverflow = async (msgs, attempt) => {
      const session = current();
      const out = await tracedCompaction(traces, spanBase, "overflow", msgs.length, () =>
        withPayer(causedBy(session), () =>
          compactor.onOverflow({ ...args, session, messages: msgs, attempt }),
        ),
      );
      detourEnd = performance.now();
      return moved(out);
    };
  }

  return {
    hooks,
    session: () => persistSession,
    finalStored: () => finalStored,
    storeFinal(outcome) {
      // A turn ended by calls to the client's functions: its answer is the stored tool-call message,
      // which must stay the session's last so the client's results can answer it.
      if (
        !persistSession ||
        finalStored !== undefined ||
        outcome.finishReason === "tool_calls" ||
        (!outcome.text && outcome.finishReason === "stop")
      )
        return outcome;
      const status =
        outcome.finishReason === "aborted" ? "aborted" : outcome.finishReason === "error" ? "error" : "ok";
      try {
        // A failed turn keeps its cause in the transcript (the console and the web chat show it);
        // history.ts never sends an error-status answer back to the model.
        const content =
          outcome.text ||
          (status === "error" && outcome.error
            ? `${outcome.error.code}: ${withoutAddresses(outcome.error.message)}`
            : "");
        finalStored = sessions.append(persistSession.id, {
          role: "assistant",
          content,
          ...(outcome.model ? { model: outcome.model } : {}),
          finishReason: outcome.finishReason,
          status,
          requestId,
        });
        return outcome;
      } catch (err) {
        // Disk full or read-only: the turn still ends (turn_end) with the cause, never silently.
        const store = storeFailure(err);
        if (!store) throw err;
        ctx.logger.error(
          { code: store.error.code, runId: t.runId },
          `could not store the answer: ${store.error.message}`,
        );
        if (outcome.finishReason !== "error")
          t.emit({ type: "error", runId: t.runId, code: store.error.code, message: store.userText });
        return {
          ...outcome,
          text: store.userText,
          finishReason: "error",
          error: { code: store.error.code, message: store.userText },
        };
      }
    },
  };
}
