/**
 * The compactor the agent host plugs in (`AgentHostDeps.compactor`): the auto-compaction gate before
 * model calls, compact-and-retry on provider context overflow, and `/compact [instructions]`.
 * It works on the stored session (the truth), persists through `applyCompaction`, and hands the host
 * the successor's model messages.
 *
 * Invariants:
 * - an automatic compaction never fails a turn: errors are logged and the turn goes on uncompacted;
 * - at most one compaction (or memory flush) per session runs at a time;
 * - after an automatic compaction of a session failed, the gate skips that session for
 *   {@link AUTO_RETRY_AFTER_MS}, so a persistent failure (a broken disk) does not buy a round of
 *   summariser calls before every model call; overflow and `/compact` still try;
 * - overflow retries escalate: attempt 1 compacts to the normal budget, attempt 2 to 60% of it with half
 *   the kept tail, attempt 3 to 35% with no kept tail (which is where a hard clear can happen).
 *
 * Over 300 lines on purpose: the three entry points (before a call, on overflow, on demand) share
 * the gate and the flush.
 */
import type { Logger } from "pino";
import type { Config } from "../../config/schema.js";
import type { ChatMessage, ModelClient } from "../../models/types.js";
import type { Db } from "../../store/db.js";
import type { SessionRow, StoredMessage } from "../../session/session-store.js";
import type { AgentDef } from "../agents.js";
import type { CompactionArgs, HostCompactor } from "../host-types.js";
import { toChatMessages } from "../history.js";
import { compactHistory, type CompactResult } from "./compact.js";
import { describeOptions, hasOptions, parseCompactText, saveCompactOptions } from "./compact-options.js";
import { resolveCompactionSettings, type CompactionSettings } from "./compaction-settings.js";
import { applyCompaction, CompactionError } from "./lineage.js";
import { memoryFlushPrompt } from "./memory-flush.js";
import { modelSummarizer } from "./model-summarizer.js";
import { compactionBudget, compactionTarget, shouldCompact } from "./should-compact.js";
import { defaultTokenEstimator, type TokenEstimator } from "./token-estimator.js";

export interface HostCompactorDeps {
  db: Db;
  config: () => Config;
  /** The model router (summaries go through it, with fallbacks and retries). */
  model: ModelClient;
  /** Context window of a model for an agent (the lead passes `resolveContextWindow`). */
  contextWindow: (modelRef: string | undefined, agentId: string) => number;
  logger?: Logger;
  estimator?: TokenEstimator;
  /**
   * Runs the silent memory-flush turn (the host: a system-event turn with the memory tool, reply not
   * delivered). Absent = no memory tool; the flush is skipped.
   */
  memoryFlush?: (args: {
    session: SessionRow;
    agent: AgentDef;
    modelRef: string | undefined;
    prompt: string;
  }) => Promise<void>;
  /** Tokens of tool specs sent with each call, counted against the budget. Default 0. */
  toolTokens?: (agent: AgentDef) => number;
  now?: () => number;
}

/** How long the auto-compaction gate leaves a session alone after its compaction failed. */
export const AUTO_RETRY_AFTER_MS = 10 * 60_000;

/** What one compaction did (also logged). */
export interface CompactionOutcome extends CompactResult {
  sourceSessionId: string;
  successorId: string;
}

interface Plan {
  session: SessionRow;
  agent: AgentDef;
  modelRef: string | undefined;
  settings: CompactionSettings;
  budget: number;
  /** What the protected tail (the question and this turn's work) may take before it is cut. */
  protectedBudget?: number;
  keepLastN: number;
  instructions?: string;
  signal?: AbortSignal;
}

/** Maps stored rows 1:1 to model messages (ids kept alongside), skipping rows the model never sees. */
function storedForCompaction(rows: readonly StoredMessage[]): { msgs: ChatMessage[]; ids: number[] } {
  const msgs: ChatMessage[] = [];
  const ids: number[] = [];
  for (const r of rows) {
    let m: ChatMessage | undefined;
    if (r.role === "user") m = { role: "user", content: r.content };
    else if (r.role === "assistant" && r.status !== "error") {
      const calls = r.tool_calls
        ? (JSON.parse(r.tool_calls) as NonNullable<Extract<ChatMessage, { role: "assistant" }>["tool_calls"]>)
        : [];
      m =
        calls.length > 0
          ? { role: "assistant", content: r.content, tool_calls: calls }
          : { role: "assistant", content: r.content };
    } else if (r.role === "tool")
      m = {
        role: "tool",
        content: r.content,
        tool_call_id: r.tool_call_id ?? "",
        ...(r.tool_name ? { name: r.tool_name } : {}),
      };
    else if (r.role === "system") m = { role: "system", content: r.content };
    else if (r.role === "event") m = { role: "system", content: `[system event] ${r.content}` };
    if (m) {
      msgs.push(m);
      ids.push(r.id);
    }
  }
  return { msgs, ids };
}

function fmt(n: number): string {
  return n.toLocaleString("en-US");
}

/** The one-line user notice for a compaction. */
export function compactionNotice(
  o: Pick<CompactResult, "level" | "messagesSummarised" | "tokensBefore" | "tokensAfter" | "cut">,
): string {
  const what =
    o.level === "full" && o.messagesSummarised === 0
      ? "nothing earlier to summarise"
      : o.level === "full"
        ? `summarised ${fmt(o.messagesSummarised)} earlier messages`
        : o.level === "partial"
          ? `summarised ${fmt(o.messagesSummarised)} earlier messages (some parts could not be summarised and were only noted)`
          : o.level === "note"
            ? `replaced ${fmt(o.messagesSummarised)} earlier messages with a short note (the summariser failed)`
            : "cleared the conversation history (it could not be made to fit)";
  const head = `Compacted the conversation: ${what}; ~${fmt(o.tokensBefore)} -> ~${fmt(o.tokensAfter)} tokens.`;
  if (!o.cut) return head;
  return `${head} Your message (with this turn's tool results) is too long for the model's context window (~${fmt(o.cut.tokensBefore)} tokens): it was cut to ~${fmt(o.cut.tokensAfter)} by leaving out ${fmt(o.cut.charsRemoved)} characters from the middle, and the model was told so. The full text stays in the archived session.`;
}

/** Creates the host's compactor. */
export function createHostCompactor(deps: HostCompactorDeps): HostCompactor & {
  /** Compacts a session now, whatever the threshold (used by the gateway/CLI as well). */
  compactSession(
    plan: Omit<Plan, "settings" | "budget" | "keepLastN"> & { keepLastN?: number; budget?: number },
  ): Promise<CompactionOutcome>;
} {
  const est = deps.estimator ?? defaultTokenEstimator;
  const now = deps.now ?? Date.now;
  const busy = new Set<string>();
  /** Session id -> time its last automatic compaction failed. */
  const failedAt = new Map<string, number>();
  const log = deps.logger?.child({ module: "compaction" });
  const store = {
    messages: deps.db.prepare<[string], StoredMessage>(
      "SELECT * FROM messages WHERE session_id = ? ORDER BY id",
    ),
    session: deps.db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
  };

  async function run(plan: Plan): Promise<CompactionOutcome> {
    const { msgs, ids } = storedForCompaction(store.messages.all(plan.session.id));
    const summaryRef = plan.settings.summaryModel ?? plan.modelRef;
    const result = await compactHistory({
      messages: msgs,
      keepLastN: plan.keepLastN,
      observationMask: plan.settings.observationMask,
      ...(plan.instructions ? { instructions: plan.instructions } : {}),
      budgetTokens: plan.budget,
      ...(plan.protectedBudget !== undefined ? { protectedBudgetTokens: plan.protectedBudget } : {}),
      summaryContextWindow: deps.contextWindow(summaryRef, plan.agent.id),
      summarize: modelSummarizer(deps.model, summaryRef ? { modelRef: summaryRef } : {}),
      estimator: est,
      ...(plan.signal ? { signal: plan.signal } : {}),
      onError: (err, stage) =>
        log?.warn({ err, stage, sessionId: plan.session.id }, "summariser failed; falling back"),
    });
    if (result.level === "noop")
      throw new CompactionError(
        "NOTHING_TO_COMPACT",
        `nothing to compact: the session has ${msgs.length} messages and keeps the last ${plan.keepLastN}`,
      );
    const replacedContent = new Map<number, { content: string; parts?: string }>();
    for (const i of result.cut?.cutIndexes ?? []) {
      const m = result.keptMessages[result.keptIndexes.indexOf(i)];
      if (!m) continue;
      replacedContent.set(
        ids[i]!,
        typeof m.content === "string"
          ? { content: m.content }
          : {
              content: m.content.map((p) => (p.type === "text" ? p.text : "")).join("\n"),
              parts: JSON.stringify(m.content),
            },
      );
    }
    const applied = applyCompaction(deps.db, {
      sourceSessionId: plan.session.id,
      summary: result.summary,
      level: result.level,
      keptMessageIds: result.keptIndexes.map((i) => ids[i]!),
      replacedContent,
      tokensBefore: result.tokensBefore,
      tokensAfter: result.tokensAfter,
      messagesSummarised: result.messagesSummarised,
      ...(plan.instructions ? { instructions: plan.instructions } : {}),
      now: now(),
    });
    const outcome = { ...result, sourceSessionId: plan.session.id, successorId: applied.successorId };
    log?.info(
      {
        sessionId: plan.session.id,
        successorId: applied.successorId,
        level: result.level,
        tokensBefore: result.tokensBefore,
        tokensAfter: result.tokensAfter,
        messagesSummarised: result.messagesSummarised,
        chunks: result.chunks,
        failedChunks: result.failedChunks,
        ...(result.cut
          ? { cutTokensBefore: result.cut.tokensBefore, cutTokensAfter: result.cut.tokensAfter }
          : {}),
      },
      "session compacted",
    );
    if (result.cut)
      log?.warn(
        {
          sessionId: plan.session.id,
          tokensBefore: result.cut.tokensBefore,
          tokensAfter: result.cut.tokensAfter,
        },
        "the message being answered did not fit the model's context window; it was cut (the archived session keeps it whole)",
      );
    return outcome;
  }

  /** Model messages of the successor: the system prompt, then its stored history. */
  function successorMessages(successorId: string, system: string): ChatMessage[] {
    return [{ role: "system", content: system }, ...toChatMessages(store.messages.all(successorId))];
  }

  /** What the compacted history must fit in: under the gate's budget and at most half the window. */
  function budgetFor(args: CompactionArgs, settings: CompactionSettings): number {
    const window = deps.contextWindow(args.modelRef, args.agent.id);
    const fixed =
      est.messages([{ role: "system", content: args.system }]) + (deps.toolTokens?.(args.agent) ?? 0);
    return compactionTarget(Math.max(256, compactionBudget(settings, window) - fixed), window, fixed);
  }

  /**
   * What the question being answered and this turn's work may take: the whole window but the
   * reply's reserve, the fixed prompt and room for a short summary. Only above that is it cut.
   */
  function protectedBudgetFor(args: CompactionArgs, settings: CompactionSettings): number {
    const window = deps.contextWindow(args.modelRef, args.agent.id);
    const fixed =
      est.messages([{ role: "system", content: args.system }]) + (deps.toolTokens?.(args.agent) ?? 0);
    const reserve = Math.min(settings.reserveTokens, Math.floor(window / 8));
    return Math.max(256, window - reserve - fixed - 256);
  }

  async function guarded<T>(sessionId: string, f: () => Promise<T>): Promise<T | undefined> {
    if (busy.has(sessionId)) return undefined;
    busy.add(sessionId);
    try {
      return await f();
    } finally {
      busy.delete(sessionId);
    }
  }

  return {
    async beforeModelCall(args) {
      const settings = resolveCompactionSettings(deps.config(), args.agent.id, args.session);
      if (settings.strategy !== "auto") return;
      const window = deps.contextWindow(args.modelRef, args.agent.id);
      const gate = shouldCompact({
        settings,
        contextWindow: window,
        promptTokens: est.messages(args.messages) + (deps.toolTokens?.(args.agent) ?? 0),
        historyMessages: args.messages.length - 1,
      });
      if (!gate.compact) return;
      const failed = failedAt.get(args.session.id);
      if (failed !== undefined && now() - failed < AUTO_RETRY_AFTER_MS) return;
      try {
        const out = await guarded(args.session.id, async () => {
          if (settings.memoryFlush && deps.memoryFlush) {
            try {
              await deps.memoryFlush({
                session: args.session,
                agent: args.agent,
                modelRef: args.modelRef,
                prompt: memoryFlushPrompt({ date: new Date(now()).toISOString().slice(0, 10) }),
              });
            } catch (err) {
              log?.warn({ err, sessionId: args.session.id }, "memory flush failed; compacting anyway");
            }
          }
          return run({
            session: args.session,
            agent: args.agent,
            modelRef: args.modelRef,
            settings,
            budget: budgetFor(args, settings),
            protectedBudget: protectedBudgetFor(args, settings),
            keepLastN: settings.keepLastN,
          });
        });
        if (!out) return;
        failedAt.delete(args.session.id);
        args.emit({ type: "notice", runId: args.runId, kind: "compaction", text: compactionNotice(out) });
        return successorMessages(out.successorId, args.system);
      } catch (err) {
        // A pending question that fits but keeps the prompt over the threshold: nothing to fold.
        if (err instanceof CompactionError && err.code === "NOTHING_TO_COMPACT") return;
        // Never fail the turn: it continues uncompacted and may still hit the provider's own limit.
        failedAt.set(args.session.id, now());
        if (failedAt.size > 10_000) failedAt.delete(failedAt.keys().next().value!);
        log?.warn(
          { err, sessionId: args.session.id, retryInMs: AUTO_RETRY_AFTER_MS },
          "auto-compaction failed; continuing without it",
        );
        return;
      }
    },

    async onOverflow(args) {
      const settings = resolveCompactionSettings(deps.config(), args.agent.id, args.session);
      if (settings.strategy !== "auto") return undefined;
      const scale = args.attempt <= 1 ? 1 : args.attempt === 2 ? 0.6 : 0.35;
      const keepLastN =
        args.attempt <= 1 ? settings.keepLastN : args.attempt === 2 ? Math.floor(settings.keepLastN / 2) : 0;
      try {
        const out = await guarded(args.session.id, () =>
          run({
            session: args.session,
            agent: args.agent,
            modelRef: args.modelRef,
            settings,
            budget: Math.max(256, Math.floor(budgetFor(args, settings) * scale)),
            protectedBudget: Math.max(256, Math.floor(protectedBudgetFor(args, settings) * scale)),
            keepLastN,
          }),
        );
        if (!out) return undefined;
        args.emit({ type: "notice", runId: args.runId, kind: "compaction", text: compactionNotice(out) });
        return successorMessages(out.successorId, args.system);
      } catch (err) {
        log?.warn({ err, sessionId: args.session.id, attempt: args.attempt }, "overflow compaction failed");
        return undefined;
      }
    },

    async compactNow(args) {
      // Leading `key=value` options (keep=4 mask=off ...) are per-session settings: saved on the row
      // (and so copied to successors) before this compaction uses them.
      const { options, instructions } = parseCompactText(args.instructions);
      let session = args.session;
      const saved = hasOptions(options) ? describeOptions(options) : undefined;
      if (saved) {
        saveCompactOptions(deps.db, session.id, options);
        session = store.session.get(session.id) ?? session;
        log?.info({ sessionId: session.id, options: saved }, "session compaction settings changed");
      }
      const withSaved = (err: unknown): unknown =>
        saved && err instanceof CompactionError
          ? new CompactionError(err.code, `${err.message} (settings saved: ${saved})`, err.info)
          : err;
      const settings = resolveCompactionSettings(deps.config(), args.agent.id, session);
      if (settings.strategy === "off")
        throw withSaved(
          new CompactionError("COMPACTION_OFF", "compaction is off for this session (compact.strategy: off)"),
        );
      const window = deps.contextWindow(args.modelRef, args.agent.id);
      const out = await guarded(session.id, () =>
        run({
          session,
          agent: args.agent,
          modelRef: args.modelRef,
          settings,
          budget: compactionBudget(settings, window),
          keepLastN: settings.keepLastN,
          ...(instructions ? { instructions } : {}),
        }),
      ).catch((err: unknown) => {
        throw withSaved(err);
      });
      if (!out)
        throw new CompactionError("COMPACTION_BUSY", "a compaction of this session is already running");
      return {
        summary: out.summary,
        tokensBefore: out.tokensBefore,
        tokensAfter: out.tokensAfter,
        successorId: out.successorId,
      };
    },

    async compactSession(p) {
      const settings = resolveCompactionSettings(deps.config(), p.agent.id, p.session);
      const budget = p.budget ?? compactionBudget(settings, deps.contextWindow(p.modelRef, p.agent.id));
      const out = await guarded(p.session.id, () =>
        run({ ...p, settings, budget, keepLastN: p.keepLastN ?? settings.keepLastN }),
      );
      if (!out)
        throw new CompactionError("COMPACTION_BUSY", "a compaction of this session is already running");
      return out;
    },
  };
}
