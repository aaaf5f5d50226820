/**
 * The agent host: implements AgentHost (internal/core/host.ts). It admits a message (stores it before
 * `submit` returns) and queues its turn; the rest lives in rooms of one purpose:
 * - turn-queue.ts: per-session queues and the global limit;
 * - run-turn.ts: one turn, with turn-setup.ts (model input) and turn-recorder.ts (what it stores);
 * - session-admin.ts: `/new`, `/compact`, `/model`, `/status`.
 *
 * Invariants:
 * - the user message is committed to the store before `submit` returns (nothing said is lost on kill -9);
 * - turns of one session key run one at a time in arrival order; nested turns bypass the global limit;
 * - `result` never rejects: failures resolve with finishReason "error" and a user-facing message.
 */
import { randomUUID } from "node:crypto";
import type { AgentEvent } from "../core/agent-events.js";
import type { AgentHost, InboundMessage, SessionInfo, TurnHandle, TurnResult } from "../core/host.js";
import { ZERO_USAGE } from "../core/usage.js";
import { SessionStore, type SessionRow } from "../session/session-store.js";
import { storeFailure } from "../store/db.js";
import { findAgent, type AgentDef } from "./agents.js";
import { PromptBuilder } from "./prompt.js";
import { WorkspaceFiles } from "./workspace-files.js";
import { TraceRecorder } from "./trace.js";
import { AgentPromptFiles } from "./catalog/agent-prompt.js";
import { agentProblem, echoFallbackAgent } from "./echo-fallback.js";
import type { AgentHostDeps } from "./host-types.js";
import { TurnQueue, type ParkSlot } from "./turn-queue.js";
import type { TreeAcc } from "./turn-recorder.js";
import { UsageWriter } from "./usage-writer.js";
import { runTurn, type TurnEnv } from "./run-turn.js";
import { SessionAdmin } from "./session-admin.js";
import { appendInbound } from "./stored-prelude.js";
import type { Payer } from "../budgets/spend.js";
import { currentPayer } from "../budgets/payer-scope.js";

export type { AgentHostDeps, CompactionArgs, Engine, HostCompactor, UsageRecord } from "./host-types.js";

export class AgentHostImpl implements AgentHost, TurnEnv {
  readonly sessions: SessionStore;
  readonly traces: TraceRecorder;
  readonly prompt: PromptBuilder;
  readonly promptFiles: AgentPromptFiles;
  readonly queue: TurnQueue;
  readonly usage: UsageWriter;
  readonly trees = new Map<string, TreeAcc>();
  readonly rootOf = new Map<string, string>();
  /** Request id -> who pays for its model calls (a subagent's parent's payer). */
  readonly payers = new Map<string, Payer>();
  private admin: SessionAdmin;

  constructor(readonly deps: AgentHostDeps) {
    const { ctx } = deps;
    this.sessions = new SessionStore(ctx.db, () => ctx.clock.now());
    this.traces = new TraceRecorder(
      ctx.db,
      () => ctx.clock.now(),
      (err) => ctx.logger.warn({ err: err.message }, "could not write trace rows"),
    );
    this.promptFiles = new AgentPromptFiles(ctx.logger);
    // Workspace files are re-checked on the daemon's clock (at most once a second per file).
    this.prompt = new PromptBuilder(new WorkspaceFiles(1000, () => ctx.clock.now()));
    this.queue = new TurnQueue(ctx);
    this.usage = new UsageWriter(ctx, this.traces, deps.recordUsage);
    this.admin = new SessionAdmin(deps, this.sessions, this.queue, (id) => this.agentFor(id));
  }

  /**
   * The agent for a turn. An unknown explicit agent is an error; the default agent that is unknown, or
   * any agent that cannot be built (unconfigured provider, missing engine), is answered by the echo
   * fallback, which says so (echo-fallback.ts).
   */
  private agentFor(id: string | undefined, modelOverride?: string): AgentDef {
    const cfg = this.deps.ctx.config();
    const wanted = id ?? cfg.agents.default;
    const isDefault = wanted === cfg.agents.default;
    const found = findAgent(cfg, wanted, this.deps.agentSources);
    let problem: string | undefined;
    if (!found) {
      if (!isDefault) throw Object.assign(new Error(`unknown agent "${wanted}"`), { code: "AGENT_UNKNOWN" });
      problem = `no agent "${wanted}" is defined (agents.default names it; define it in config.yaml, <workspace>/agents/ or over the API)`;
    } else problem = agentProblem(cfg, found, this.deps.engines, modelOverride);
    if (!problem) return found as AgentDef;
    this.deps.ctx.logger.warn(
      { agent: wanted, reason: problem },
      "agent cannot be built: the echo agent answers",
    );
    return echoFallbackAgent(wanted, isDefault, problem);
  }

  submit(msg: InboundMessage, onEvent?: (e: AgentEvent) => void): TurnHandle {
    const { ctx } = this.deps;
    const runId = randomUUID();
    const requestId = msg.resume?.requestId ?? randomUUID();
    const controller = new AbortController();
    let agent: AgentDef;
    // Read once: the session's `/model` choice below and the session the message is stored in.
    const head = msg.ephemeral ? undefined : this.sessions.head(msg.sessionKey);
    try {
      // A model chosen for the turn or the session (`/model`) makes the agent's own model irrelevant.
      const override = msg.model ?? head?.model_override;
      agent = this.agentFor(msg.agentId, override ?? undefined);
    } catch (err) {
      const result = Promise.resolve(
        this.failed(runId, requestId, "", "AGENT_UNKNOWN", (err as Error).message),
      );
      return { runId, requestId, started: Promise.resolve(), result, abort: () => undefined };
    }
    let session: SessionRow | undefined;
    let userMessageId: number | undefined;
    const resumed = msg.resume && !msg.ephemeral ? this.sessions.get(msg.resume.sessionId) : undefined;
    if (resumed && msg.resume) {
      // An interrupted turn: its user message was committed before the crash.
      session = resumed;
      userMessageId = msg.resume.messageId;
    } else if (!msg.ephemeral) {
      try {
        // One commit for a new (or idle-reset) session, the message and what the caller records with
        // it (the nested transactions become savepoints).
        const store = (): [SessionRow, number] => {
          const row = this.sessionFor(msg.sessionKey, agent.id, head, msg.replyTarget);
          const id = appendInbound(this.sessions, row.id, msg, requestId);
          this.deps.taint?.admitted(row.id, requestId, msg);
          msg.onAccepted?.({ runId, requestId });
          return [row, id];
        };
        [session, userMessageId] = this.storeInbound(store);
      } catch (err) {
        // Disk full or read-only: the message cannot be kept, so the turn does not run (an answer the
        // history does not hold would be lost); the user and the log get the cause.
        const f = storeFailure(err);
        if (!f) throw err;
        ctx.logger.error(
          { code: f.error.code, sessionKey: msg.sessionKey },
          `could not store an incoming message: ${f.error.message}`,
        );
        const result = Promise.resolve(this.failed(runId, requestId, "", f.error.code, f.userText));
        return { runId, requestId, started: Promise.resolve(), result, abort: () => undefined };
      }
    }
    // Resumed or ephemeral: nothing new was stored above, so the caller hears of it now.
    if (userMessageId === undefined || resumed) msg.onAccepted?.({ runId, requestId });
    if (msg.parentRequestId) {
      const root = this.rootOf.get(msg.parentRequestId) ?? msg.parentRequestId;
      this.rootOf.set(requestId, root);
    } else {
      this.rootOf.set(requestId, requestId);
      this.trees.set(requestId, { usage: { ...ZERO_USAGE }, cost: 0, subCalls: 0, estimatedCalls: 0 });
    }
    // Subagents pay from their parent's budget; a memory flush from the compacting turn's (payer scope).
    this.payers.set(
      requestId,
      (msg.parentRequestId ? this.payers.get(msg.parentRequestId) : undefined) ??
        currentPayer() ?? {
          agentId: agent.id,
          channel: msg.channel,
          sessionKey: msg.ephemeral ? null : msg.sessionKey,
        },
    );
    let markStarted!: () => void;
    const started = new Promise<void>((r) => (markStarted = r));
    const task = async (park: ParkSlot): Promise<TurnResult> => {
      markStarted();
      return runTurn(
        this,
        {
          msg,
          agent,
          session,
          runId,
          requestId,
          controller,
          park,
          ...(userMessageId !== undefined ? { userMessageId } : {}),
        },
        onEvent,
      );
    };
    const depth = msg.depth ?? 0;
    const result: Promise<TurnResult> = this.queue
      .add(msg.ephemeral ? `ephemeral:${runId}` : msg.sessionKey, depth > 0, task)
      .catch((err: unknown) => {
        const f = storeFailure(err);
        if (!f)
          return this.failed(runId, requestId, session?.id ?? "", "AGENT_ERROR", (err as Error).message);
        ctx.logger.error(
          { code: f.error.code, sessionKey: msg.sessionKey },
          `turn failed: ${f.error.message}`,
        );
        return this.failed(runId, requestId, session?.id ?? "", f.error.code, f.userText);
      })
      .finally(() => {
        this.queue.untrack(result);
        this.rootOf.delete(requestId);
        this.trees.delete(requestId);
        this.payers.delete(requestId);
      });
    this.queue.track(result);
    return {
      runId,
      requestId,
      started,
      result,
      abort: (reason?: string) => controller.abort(new Error(reason ?? "aborted")),
    };
  }

  private inboundTx: ((fn: () => [SessionRow, number]) => [SessionRow, number]) | undefined;
  private storeInbound(fn: () => [SessionRow, number]): [SessionRow, number] {
    this.inboundTx ??= this.deps.ctx.db.transaction((f: () => [SessionRow, number]) => f());
    return this.inboundTx(fn);
  }

  /** The session to store a message of `key` in; `head` is the key's live session, read just before. */
  private sessionFor(
    key: string,
    agentId: string,
    head: SessionRow | undefined,
    replyTarget?: string,
  ): SessionRow {
    const cfg = this.deps.ctx.config();
    if (
      head &&
      cfg.session.idle_reset > 0 &&
      this.deps.ctx.clock.now() - head.updated_at > cfg.session.idle_reset
    ) {
      return this.sessions.reset(key, head.agent_id, "idle");
    }
    return head ?? this.sessions.create(key, agentId, replyTarget ? { origin: replyTarget } : {});
  }

  private failed(
    runId: string,
    requestId: string,
    sessionId: string,
    code: string,
    message: string,
  ): TurnResult {
    return {
      runId,
      requestId,
      sessionId,
      text: message,
      finishReason: "error",
      usage: { ...ZERO_USAGE },
      treeUsage: { ...ZERO_USAGE },
      treeCost: 0,
      subCalls: 0,
      error: { code, message },
    };
  }

  /** Like `abort`, but only when the running turn is `requestId` (a client stopping its own turn). */
  abortRequest(sessionKey: string, requestId: string): boolean {
    return this.queue.abortRequest(sessionKey, requestId);
  }
  abort(sessionKey: string): boolean {
    return this.queue.abort(sessionKey);
  }
  /** Runs `fn` in the session key's queue: after the turns queued before it, before any later one. */
  exclusive<T>(sessionKey: string, fn: () => T | Promise<T>): Promise<T> {
    return this.queue.exclusive(sessionKey, fn);
  }
  reset(sessionKey: string, reason = "reset"): { sessionId: string } {
    return this.admin.reset(sessionKey, reason);
  }
  compact(
    sessionKey: string,
    instructions?: string,
  ): Promise<{ summary: string; tokensBefore: number; tokensAfter: number }> {
    return this.admin.compact(sessionKey, instructions);
  }
  setSessionModel(sessionKey: string, model: string): void {
    this.admin.setSessionModel(sessionKey, model);
  }
  clearSessionModel(sessionKey: string): void {
    this.admin.clearSessionModel(sessionKey);
  }
  resolveModel(sessionKey: string, agentId?: string): string {
    return this.admin.resolveModel(sessionKey, agentId);
  }
  sessionInfo(sessionKey: string, agentId?: string): SessionInfo {
    return this.admin.sessionInfo(sessionKey, agentId);
  }
  queueDepth(): number {
    return this.queue.depth();
  }
  drain(ms: number): Promise<void> {
    return this.queue.drain(ms);
  }
}

/** Creates the host. */
export function createAgentHost(deps: AgentHostDeps): AgentHostImpl {
  return new AgentHostImpl(deps);
}
