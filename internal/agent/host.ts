/**
 * The agent host: implements AgentHost (internal/core/host.ts) over the loop.
 *
 * Invariants:
 * - the user message is committed to the store before `submit` returns (nothing said is lost on kill -9);
 * - turns of one session key run one at a time in arrival order (p-queue, concurrency 1 per key);
 * - top-level turns share a global limit (`agents.max_concurrent`); nested turns (subagents, depth > 0)
 *   bypass it, so a parent holding a slot never waits on a slot its own child needs (no deadlock);
 * - `result` never rejects: failures resolve with finishReason "error" and a user-facing message.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import PQueue from "p-queue";
import type { AgentEvent } from "./events.js";
import type { AgentHost, InboundMessage, SessionInfo, TurnHandle, TurnResult } from "../core/host.js";
import type { CoreContext } from "../core/context.js";
import {
  ZERO_USAGE,
  type ChatMessage,
  type ContentPart,
  type ModelClient,
  type Usage,
} from "../models/types.js";
import { ECHO_MODEL_REF } from "../models/echo-model.js";
import { TurnLog } from "./turn-log.js";
import type { ApprovalDecision, ApprovalRequest, ToolContext, ToolSet } from "../tools/tool.js";
import { SessionStore, type SessionRow } from "../session/session-store.js";
import { agentOfKey, parseSessionKey } from "../session/keys.js";
import { storeFailure } from "../store/db.js";
import { findAgent, type AgentDef, type AgentSource } from "./agents.js";
import { PromptBuilder, withContextNote } from "./prompt.js";
import { WorkspaceFiles } from "./workspace-files.js";
import { orderByTurn, toChatMessages } from "./history.js";
import {
  addUsage,
  runAgentLoop,
  type LoopGuard,
  type LoopHooks,
  type LoopOptions,
  type LoopOutcome,
} from "./loop.js";
import { TraceRecorder } from "./trace.js";
import { costOf } from "./cost.js";
import { createLoopDetector } from "./loop-detection/loop-detector.js";
import { AgentPromptFiles } from "./catalog/agent-prompt.js";
import { agentProblem, echoFallbackAgent, echoFallbackEngine, isEchoFallback } from "./echo-fallback.js";
import type { BudgetBlock, Projection } from "../budgets/budget-guard.js";
import type { Payer } from "../budgets/spend.js";
import { currentPayer, withPayer } from "../budgets/payer-scope.js";
import { projectCall } from "../budgets/projection.js";

/** An engine runs one turn and yields the same events as the model loop (model, cli, claude-cli). */
export type Engine = (
  opts: LoopOptions & { agent: AgentDef; sessionKey: string; sessionId: string },
) => AsyncGenerator<AgentEvent, LoopOutcome>;

/** Compaction as the host needs it (implemented in internal/agent/compaction). */
export interface HostCompactor {
  /** Before a model call: may compact the session and return the new model messages. */
  beforeModelCall(args: CompactionArgs): Promise<ChatMessage[] | void>;
  /** On provider context overflow: compact and return messages to retry with. */
  onOverflow(args: CompactionArgs & { attempt: number }): Promise<ChatMessage[] | undefined>;
  /** On demand (`/compact`). */
  compactNow(args: {
    session: SessionRow;
    agent: AgentDef;
    modelRef: string | undefined;
    instructions?: string;
  }): Promise<{ summary: string; tokensBefore: number; tokensAfter: number; successorId: string }>;
}

export interface CompactionArgs {
  session: SessionRow;
  agent: AgentDef;
  modelRef: string | undefined;
  messages: ChatMessage[];
  system: string;
  runId: string;
  emit: (e: AgentEvent) => void;
}

export interface AgentHostDeps {
  ctx: CoreContext;
  model: ModelClient;
  /** Tools for an agent this turn; no tools when absent. */
  toolsFor?: (agent: AgentDef, msg: InboundMessage) => ToolSet;
  /** Extra prompt sections for an agent this turn (skills list, delegate targets). */
  skillsSection?: (agent: AgentDef, toolNames: readonly string[]) => string | undefined;
  /** Asks the owner (approvals); denied at once when absent. */
  requestApproval?: (
    target: string | undefined,
    sessionKey: string,
    req: ApprovalRequest,
  ) => Promise<ApprovalDecision>;
  /** Records one model call's usage (the UsageTracker); a direct insert when absent. */
  recordUsage?: (rec: UsageRecord) => void;
  agentSources?: AgentSource[];
  loopGuard?: (agent: AgentDef) => LoopGuard | undefined;
  compactor?: HostCompactor;
  /** Non-model engines by name (`cli`, `claude-cli`). */
  engines?: Record<string, Engine>;
  /** Called when a session key is reset (`/new`), e.g. so a CLI engine drops its session. */
  onReset?: (sessionKey: string) => void;
  /**
   * Called after `/compact` of a session whose agent runs a CLI engine: the CLI keeps its own copy of
   * the conversation, so the engine drops it and starts its next session from the compacted store.
   */
  onCompacted?: (sessionKey: string) => void;
  /** Spending limits (internal/budgets): checked before each model call, told of each recorded one. */
  budget?: HostBudget;
}

/** The budget guard as the host needs it (internal/budgets/budget-guard.ts). */
export interface HostBudget {
  /** `projection` may be a function: it is called only when a limit applies. */
  check(payer: Payer, projection: Projection | (() => Projection)): BudgetBlock | undefined;
  recorded(payer: Payer): void;
}

export interface UsageRecord {
  sessionId: string | null;
  sessionKey: string | null;
  agentId: string;
  provider: string;
  model: string;
  requestId: string;
  usage: Usage;
  cost: number | null;
  /** Who pays: the channel, agent and session key of the call tree's root turn (internal/budgets). */
  channel?: string | null;
  payerAgent?: string | null;
  payerSession?: string | null;
}

interface Running {
  controller: AbortController;
  runId: string;
  requestId: string;
}

interface TreeAcc {
  usage: Usage;
  cost: number;
  subCalls: number;
}

const EMPTY_TOOLS: ToolSet = {
  specs: () => [],
  execute: async () => ({ content: "no tools available", isError: true }),
};

export class AgentHostImpl implements AgentHost {
  readonly sessions: SessionStore;
  readonly traces: TraceRecorder;
  private prompt: PromptBuilder;
  private promptFiles: AgentPromptFiles;
  private queues = new Map<string, PQueue>();
  private global: PQueue;
  private running = new Map<string, Running>();
  private trees = new Map<string, TreeAcc>();
  private rootOf = new Map<string, string>();
  /** Request id -> who pays for its model calls (a subagent's parent's payer). */
  private payers = new Map<string, Payer>();
  private inflight = new Set<Promise<TurnResult>>();
  private insertUsage;

  constructor(private deps: AgentHostDeps) {
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
    this.global = new PQueue({ concurrency: ctx.config().agents.max_concurrent });
    ctx.onConfig((next) => {
      this.global.concurrency = next.agents.max_concurrent;
    });
    this.insertUsage = ctx.db.prepare(
      `INSERT INTO usage (channel, payer_agent, payer_session, session_id, session_key, agent_id, provider, model,
         request_id, input, output, cache_read, cache_write, reasoning, total, cost, created_at)
         VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
    );
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
    try {
      // A model chosen for the turn or the session (`/model`) makes the agent's own model irrelevant.
      const override =
        msg.model ?? (msg.ephemeral ? undefined : this.sessions.head(msg.sessionKey)?.model_override);
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
        const parts = msg.images?.length ? toParts(msg.text, msg.images) : undefined;
        // One commit for a new (or idle-reset) session, the message and what the caller records with
        // it (the nested transactions become savepoints).
        const store = (): [SessionRow, number] => {
          const row = this.sessionFor(msg.sessionKey, agent.id, msg.replyTarget);
          const id = this.sessions.append(row.id, {
            role: msg.systemEvent ? "event" : "user",
            content: msg.text,
            ...(parts ? { parts } : {}),
            requestId,
          });
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
      this.trees.set(requestId, { usage: { ...ZERO_USAGE }, cost: 0, subCalls: 0 });
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
    const task = async (): Promise<TurnResult> => {
      markStarted();
      return this.runTurn(
        {
          msg,
          agent,
          session,
          runId,
          requestId,
          controller,
          ...(userMessageId !== undefined ? { userMessageId } : {}),
        },
        onEvent,
      );
    };
    const depth = msg.depth ?? 0;
    const queue = this.queueFor(msg.ephemeral ? `ephemeral:${runId}` : msg.sessionKey);
    const result = queue
      .add(() => (depth > 0 ? task() : this.global.add(task)))
      .then((r) => r as TurnResult)
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
        this.inflight.delete(result);
        this.rootOf.delete(requestId);
        this.trees.delete(requestId);
        this.payers.delete(requestId);
      });
    this.inflight.add(result);
    void ctx;
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

  private sessionFor(key: string, agentId: string, replyTarget?: string): SessionRow {
    const cfg = this.deps.ctx.config();
    const head = this.sessions.head(key);
    if (
      head &&
      cfg.session.idle_reset > 0 &&
      this.deps.ctx.clock.now() - head.updated_at > cfg.session.idle_reset
    ) {
      return this.sessions.reset(key, head.agent_id, "idle");
    }
    return head ?? this.sessions.create(key, agentId, replyTarget ? { origin: replyTarget } : {});
  }

  private queueFor(key: string): PQueue {
    let q = this.queues.get(key);
    if (!q) {
      q = new PQueue({ concurrency: 1 });
      this.queues.set(key, q);
      const qq = q;
      q.addEventListener("idle", () => {
        if (qq.size === 0 && qq.pending === 0) this.queues.delete(key);
      });
    }
    return q;
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

  private async runTurn(
    t: {
      msg: InboundMessage;
      agent: AgentDef;
      session: SessionRow | undefined;
      runId: string;
      requestId: string;
      controller: AbortController;
      userMessageId?: number;
    },
    onEvent?: (e: AgentEvent) => void,
  ): Promise<TurnResult> {
    const { ctx } = this.deps;
    const { msg, agent, runId, requestId, controller } = t;
    const cfg = ctx.config();
    // The session may have been compacted or reset while this turn waited; the stored user message
    // stays where it was committed.
    const session = t.session ? (this.sessions.get(t.session.id) ?? t.session) : undefined;
    const liveSession =
      session && session.successor_id ? (this.sessions.head(msg.sessionKey) ?? session) : session;
    const sessionId = liveSession?.id ?? "";
    const runKey = msg.ephemeral ? `ephemeral:${runId}` : msg.sessionKey;
    this.running.set(runKey, { controller, runId, requestId });
    const emit = (e: AgentEvent): void => {
      try {
        onEvent?.(e);
      } catch (err) {
        ctx.logger.warn({ err: (err as Error).message }, "turn event subscriber failed");
      }
      if (!msg.silent)
        ctx.bus.emit("chat", {
          sessionKey: msg.sessionKey,
          agentId: agent.id,
          channel: msg.channel,
          event: e,
        });
    };
    const depth = msg.depth ?? 0;
    const rootId = this.rootOf.get(requestId) ?? requestId;
    this.traces.start({
      requestId,
      parentRequestId: msg.parentRequestId ?? null,
      rootRequestId: rootId,
      depth,
      kind: "turn",
      name: agent.id,
      sessionId: sessionId || null,
      agentId: agent.id,
    });
    emit({ type: "turn_start", runId, sessionKey: msg.sessionKey, sessionId, agentId: agent.id, requestId });
    const turnLog = new TurnLog(ctx.logger, {
      runId,
      requestId,
      channel: msg.channel,
      session: msg.sessionKey,
      agent: agent.id,
    });

    const modelRef = msg.model ?? liveSession?.model_override ?? agent.model ?? undefined;
    const tools = this.deps.toolsFor?.(agent, msg) ?? EMPTY_TOOLS;
    const toolNames = tools.specs().map((s) => s.name);
    let history: ChatMessage[];
    if (msg.ephemeral) {
      history = msg.ephemeral.history.map((h) => ({ role: h.role, content: h.content }) as ChatMessage);
      history.push({ role: "user", content: msg.images?.length ? toParts(msg.text, msg.images) : msg.text });
    } else {
      history = toChatMessages(orderByTurn(this.sessions.messages(sessionId), t.userMessageId));
    }
    // An agent's prompt file is a {{variable}} template rendered for this turn (catalog/agent-prompt.ts).
    const agentPrompt = this.promptFiles.render(agent, cfg, {
      agentId: agent.id,
      userInput: msg.text,
      channel: msg.channel,
      history,
      now: ctx.clock.now(),
    });
    const system = this.prompt.build({
      config: cfg,
      agent,
      ...(agentPrompt !== undefined ? { agentPrompt } : {}),
      ...(msg.lightContext || agent.light_context ? { light: true } : {}),
      ...(this.deps.skillsSection ? { skillsSection: this.deps.skillsSection(agent, toolNames) ?? "" } : {}),
      toolNames,
      ...(msg.extraSystem ? { extra: msg.extraSystem } : {}),
      now: ctx.clock.now(),
    });
    // The clock and the origin change every turn: for the model loop they follow the newest message,
    // so the system prompt and history stay a cacheable prefix; CLI engines get them in their prompt.
    const modelLoop = agent.engine === "model" && !isEchoFallback(agent);
    const note = this.prompt.volatile({
      config: cfg,
      ...(msg.originLabel ? { originLabel: msg.originLabel } : {}),
      now: ctx.clock.now(),
    });
    const noted = (m: ChatMessage[]): ChatMessage[] => (modelLoop ? withContextNote(m, note) : m);
    const systemText = modelLoop ? system : `${system}\n\n${note.split("\n").join("\n\n")}`;
    const messages: ChatMessage[] = noted([{ role: "system", content: systemText }, ...history]);
    turnLog.start({ model: modelRef, history: history.length, tools: toolNames.length });

    let finalStored: number | undefined;
    let persistSession = liveSession;
    const tree = this.trees.get(rootId);
    const payer = this.payers.get(requestId) ?? {
      agentId: agent.id,
      channel: msg.channel,
      sessionKey: msg.ephemeral ? null : msg.sessionKey,
    };
    const budget = this.deps.budget;
    const hooks: LoopHooks = {
      gate: (msgs) => {
        const block = budget?.check(payer, () =>
          projectCall(cfg, modelRef, msgs, tools.specs(), agent.max_tokens),
        );
        return block ? { code: "BUDGET_EXCEEDED", message: block.notice } : undefined;
      },
      onAssistantMessage: (m) => {
        if (!persistSession) return;
        const id = this.sessions.append(persistSession.id, {
          role: "assistant",
          content: m.content,
          toolCalls: m.toolCalls,
          ...(m.model ? { model: m.model } : {}),
          finishReason: m.finishReason,
          ...(m.usage ? { usage: m.usage } : {}),
          requestId,
        });
        if (m.toolCalls.length === 0) finalStored = id;
      },
      onToolResult: (m) => {
        if (!persistSession) return;
        this.sessions.append(persistSession.id, {
          role: "tool",
          content: m.content,
          toolCallId: m.callId,
          toolName: m.name,
          status: m.isError ? "error" : "ok",
          requestId,
        });
      },
      onUsage: (u) => {
        const cost = u.cost ?? costOf(cfg.models.pricing, u.provider, u.model, u.usage);
        turnLog.modelCall(u.provider, u.model, u.usage, cost);
        const rec: UsageRecord = {
          sessionId: persistSession?.id ?? null,
          sessionKey: msg.ephemeral ? null : msg.sessionKey,
          agentId: agent.id,
          provider: u.provider,
          model: u.model,
          requestId,
          usage: u.usage,
          cost,
          channel: payer.channel,
          payerAgent: payer.agentId,
          payerSession: payer.sessionKey,
        };
        if (tree) {
          tree.usage = addUsage(tree.usage, u.usage);
          tree.cost += cost ?? 0;
          tree.subCalls++;
        }
        // The usage row and the model call's trace row in one commit (one WAL write, not two).
        this.recordModelCall(rec, {
          requestId,
          rootRequestId: rootId,
          depth,
          kind: "model",
          name: `${u.provider}/${u.model}`,
          meta: u.usage,
        });
        budget?.recorded(payer);
      },
      onToolCall: async (call, run) => {
        const id = this.traces.start({
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
        turnLog.toolCall(call.name, !r.isError, performance.now() - t0);
        this.traces.end(id, r.isError ? "error" : "ok");
        return r;
      },
    };
    const compactor = this.deps.compactor;
    if (compactor && liveSession) {
      hooks.beforeModelCall = async (msgs) => {
        const cur = this.sessions.get(persistSession?.id ?? sessionId) ?? liveSession;
        const out = await withPayer(payer, () =>
          compactor.beforeModelCall({
            session: cur,
            agent,
            modelRef,
            messages: msgs,
            system: systemText,
            runId,
            emit,
          }),
        );
        if (out) persistSession = this.sessions.head(msg.sessionKey) ?? persistSession;
        return out ? noted(out) : out;
      };
      hooks.onContextOverflow = async (msgs, attempt) => {
        const cur = this.sessions.get(persistSession?.id ?? sessionId) ?? liveSession;
        const out = await withPayer(payer, () =>
          compactor.onOverflow({
            session: cur,
            agent,
            modelRef,
            messages: msgs,
            system: systemText,
            runId,
            emit,
            attempt,
          }),
        );
        if (out) persistSession = this.sessions.head(msg.sessionKey) ?? persistSession;
        return out ? noted(out) : out;
      };
    }
    const toolContext: ToolContext = {
      sessionKey: msg.sessionKey,
      sessionId,
      agentId: agent.id,
      workspace: cfg.workspace,
      ...(msg.replyTarget ? { replyTarget: msg.replyTarget } : {}),
      requestId,
      depth,
      logger: ctx.logger,
      requestApproval: (req) =>
        this.deps.requestApproval
          ? this.deps.requestApproval(msg.replyTarget, msg.sessionKey, req)
          : Promise.resolve("denied"),
    };
    const loopOpts: LoopOptions = {
      runId,
      model: this.deps.model,
      ...(modelRef ? { modelRef } : {}),
      tools,
      messages,
      signal: controller.signal,
      maxIterations: agent.max_iterations,
      ...(agent.max_tokens ? { maxTokens: agent.max_tokens } : {}),
      ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
      toolContext,
      hooks,
    };
    const guard = this.deps.loopGuard ? this.deps.loopGuard(agent) : this.defaultLoopGuard(agent, runId);
    if (guard) loopOpts.loopGuard = guard;
    const engine = isEchoFallback(agent)
      ? echoFallbackEngine
      : agent.engine !== "model"
        ? this.deps.engines?.[agent.engine]
        : undefined;
    let outcome: LoopOutcome;
    try {
      if (!engine && agent.engine !== "model")
        throw new Error(`engine "${agent.engine}" of agent "${agent.id}" is not available`);
      // The model loop checks the budget before each call; other engines are checked once up front.
      const stop = engine && !isEchoFallback(agent) ? hooks.gate?.(messages, 1) : undefined;
      const gen = stop
        ? (async function* (): AsyncGenerator<AgentEvent, LoopOutcome> {
            yield { type: "error", runId, code: stop.code, message: stop.message };
            return {
              text: stop.message,
              finishReason: "error",
              usage: { ...ZERO_USAGE },
              iterations: 0,
              error: stop,
            };
          })()
        : engine
          ? engine({ ...loopOpts, agent, sessionKey: msg.sessionKey, sessionId })
          : runAgentLoop(loopOpts);
      for (;;) {
        const step = await gen.next();
        if (step.done) {
          outcome = step.value;
          break;
        }
        emit(step.value);
      }
    } catch (err) {
      const store = storeFailure(err);
      if (store) ctx.logger.error({ code: store.error.code, runId }, `turn failed: ${store.error.message}`);
      const code = store?.error.code ?? "AGENT_ERROR";
      const message = store?.userText ?? `Something went wrong while answering: ${(err as Error).message}`;
      emit({ type: "error", runId, code, message });
      outcome = {
        text: message,
        finishReason: "error",
        usage: { ...ZERO_USAGE },
        iterations: 0,
        error: { code, message },
      };
    } finally {
      if (this.running.get(runKey)?.runId === runId) this.running.delete(runKey);
    }

    if (persistSession && finalStored === undefined && (outcome.text || outcome.finishReason !== "stop")) {
      const status =
        outcome.finishReason === "aborted" ? "aborted" : outcome.finishReason === "error" ? "error" : "ok";
      try {
        finalStored = this.sessions.append(persistSession.id, {
          role: "assistant",
          content: outcome.text,
          ...(outcome.model ? { model: outcome.model } : {}),
          finishReason: outcome.finishReason,
          status,
          requestId,
        });
      } catch (err) {
        // Disk full or read-only: the turn still ends (turn_end below) with the cause, never silently.
        const store = storeFailure(err);
        if (!store) throw err;
        ctx.logger.error(
          { code: store.error.code, runId },
          `could not store the answer: ${store.error.message}`,
        );
        if (outcome.finishReason !== "error")
          emit({ type: "error", runId, code: store.error.code, message: store.userText });
        outcome = {
          ...outcome,
          text: store.userText,
          finishReason: "error",
          error: { code: store.error.code, message: store.userText },
        };
      }
    }
    if (outcome.finishReason === "aborted")
      emit({ type: "notice", runId, kind: "aborted", text: "Stopped." });
    emit({
      type: "turn_end",
      runId,
      text: outcome.text,
      finishReason: outcome.finishReason,
      usage: outcome.usage,
      ...(outcome.model ? { model: outcome.model } : {}),
      ...(finalStored !== undefined ? { messageId: finalStored } : {}),
    });
    turnLog.end({
      finishReason: outcome.finishReason,
      usage: outcome.usage,
      model: outcome.model,
      error: outcome.error,
      depth,
    });
    try {
      this.traces.endRequest(requestId, outcome.finishReason === "error" ? "error" : "ok");
    } catch (err) {
      if (!storeFailure(err)) throw err;
    }
    const treeNow = this.trees.get(rootId);
    return {
      runId,
      requestId,
      sessionId: persistSession?.id ?? sessionId,
      text: outcome.text,
      finishReason: outcome.finishReason,
      usage: outcome.usage,
      treeUsage: treeNow ? { ...treeNow.usage } : outcome.usage,
      treeCost: treeNow?.cost ?? 0,
      subCalls: treeNow?.subCalls ?? 0,
      ...(outcome.model ? { model: outcome.model } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
      ...(t.userMessageId !== undefined ? { userMessageId: t.userMessageId } : {}),
      ...(finalStored !== undefined ? { assistantMessageId: finalStored } : {}),
    };
  }

  /** Tool-loop detection, on by default (`agents.defaults.loop_detection`); every finding is logged. */
  private defaultLoopGuard(agent: AgentDef, runId: string): LoopGuard | undefined {
    const cfg = this.deps.ctx.config().agents.defaults.loop_detection;
    if (!cfg.enabled) return undefined;
    const detector = createLoopDetector(cfg);
    const logger = this.deps.ctx.logger;
    return {
      beforeCall: (call) => {
        const check = detector.beforeCall(call);
        for (const f of check.findings)
          logger.warn(
            { runId, agent: agent.id, detector: f.detector, level: f.level, count: f.count, tool: f.tool },
            `tool loop detected: ${f.message}`,
          );
        return { verdict: check.verdict, message: check.message };
      },
      afterCall: (call, result) => detector.afterCall(call, result),
    };
  }

  private modelCallTx: ((rec: UsageRecord, point: Parameters<TraceRecorder["point"]>[0]) => void) | undefined;

  /** Records a model call's usage and its trace point in one transaction. */
  private recordModelCall(rec: UsageRecord, point: Parameters<TraceRecorder["point"]>[0]): void {
    this.modelCallTx ??= this.deps.ctx.db.transaction(
      (r: UsageRecord, p: Parameters<TraceRecorder["point"]>[0]) => {
        this.record(r);
        this.traces.point(p);
        // Trace rows written behind (the turn's start, earlier tool calls) ride on this commit.
        this.traces.flush();
      },
    );
    this.modelCallTx(rec, point);
  }

  private record(rec: UsageRecord): void {
    try {
      if (this.deps.recordUsage) return this.deps.recordUsage(rec);
      const u = rec.usage;
      this.insertUsage.run(
        rec.channel ?? null,
        rec.payerAgent ?? null,
        rec.payerSession ?? null,
        rec.sessionId,
        rec.sessionKey,
        rec.agentId,
        rec.provider,
        rec.model,
        rec.requestId,
        u.input,
        u.output,
        u.cacheRead,
        u.cacheWrite,
        u.reasoning,
        u.total,
        rec.cost,
        this.deps.ctx.clock.now(),
      );
    } catch (err) {
      this.deps.ctx.logger.error({ err: (err as Error).message }, "failed to record usage");
    }
  }

  /** Like `abort`, but only when the running turn is `requestId` (a client stopping its own turn). */
  abortRequest(sessionKey: string, requestId: string): boolean {
    return this.running.get(sessionKey)?.requestId === requestId && this.abort(sessionKey);
  }

  abort(sessionKey: string): boolean {
    const r = this.running.get(sessionKey);
    if (!r) return false;
    r.controller.abort(new Error("aborted by user"));
    return true;
  }

  /** Runs `fn` in the session key's queue: after the turns queued before it, before any later one. */
  async exclusive<T>(sessionKey: string, fn: () => T | Promise<T>): Promise<T> {
    let out: { v: T } | undefined;
    await this.queueFor(sessionKey).add(async () => {
      out = { v: await fn() };
    });
    if (!out) throw new Error("the session queue dropped the task");
    return out.v;
  }

  reset(sessionKey: string, reason = "reset"): { sessionId: string } {
    const head = this.sessions.head(sessionKey);
    const agentId = head?.agent_id ?? this.keyAgent(sessionKey);
    const row = this.sessions.reset(sessionKey, agentId, reason);
    this.deps.onReset?.(sessionKey);
    this.deps.ctx.bus.emit("session.changed", { sessionKey, sessionId: row.id, reason });
    return { sessionId: row.id };
  }

  async compact(
    sessionKey: string,
    instructions?: string,
  ): Promise<{ summary: string; tokensBefore: number; tokensAfter: number }> {
    const c = this.deps.compactor;
    if (!c) throw Object.assign(new Error("compaction is not available"), { code: "COMPACTION_UNAVAILABLE" });
    const session = this.sessions.head(sessionKey);
    if (!session)
      throw Object.assign(new Error(`no session for ${sessionKey}`), { code: "SESSION_NOT_FOUND" });
    const agent = this.agentFor(session.agent_id);
    const modelRef = session.model_override ?? agent.model ?? undefined;
    // Run through the session queue so compaction never races a running turn.
    // A /compact is paid by the session it compacts.
    const payer: Payer = { agentId: agent.id, channel: channelOfKey(sessionKey), sessionKey };
    const out = await this.queueFor(sessionKey).add(() =>
      withPayer(payer, () =>
        c.compactNow({ session, agent, modelRef, ...(instructions ? { instructions } : {}) }),
      ),
    );
    if (!out) throw new Error("compaction produced no result");
    if (agent.engine !== "model") this.deps.onCompacted?.(sessionKey);
    this.deps.ctx.bus.emit("session.changed", {
      sessionKey,
      sessionId: out.successorId,
      reason: "compacted",
    });
    return out;
  }

  setSessionModel(sessionKey: string, model: string): void {
    const s = this.sessions.ensure(sessionKey, this.keyAgent(sessionKey));
    this.sessions.setModelOverride(s.id, model);
  }

  /** The agent a session key names (`agent:<id>:...`), else the default agent. */
  private keyAgent(sessionKey: string): string {
    return agentOfKey(sessionKey) ?? this.deps.ctx.config().agents.default;
  }

  clearSessionModel(sessionKey: string): void {
    const s = this.sessions.head(sessionKey);
    if (s) this.sessions.setModelOverride(s.id, null);
  }

  resolveModel(sessionKey: string, agentId?: string): string {
    const cfg = this.deps.ctx.config();
    // With no provider the echo model answers whatever a session or agent asks for (router.ts): say so.
    if (Object.keys(cfg.models.providers).length === 0) return ECHO_MODEL_REF;
    const s = this.sessions.head(sessionKey);
    if (s?.model_override) return s.model_override;
    const agent = findAgent(cfg, agentId ?? s?.agent_id ?? cfg.agents.default, this.deps.agentSources);
    if (agent?.model) return agent.model;
    if (cfg.models.primary) return cfg.models.primary;
    return "(no primary model configured)";
  }

  sessionInfo(sessionKey: string, agentId?: string): SessionInfo {
    const cfg = this.deps.ctx.config();
    const s = this.sessions.head(sessionKey);
    const stats = s ? this.sessions.stats(s.id) : { messages: 0, chars: 0 };
    const usage = s
      ? (this.deps.ctx.db
          .prepare<[string], Usage>(
            `SELECT COALESCE(SUM(input),0) AS input, COALESCE(SUM(output),0) AS output, COALESCE(SUM(cache_read),0) AS cacheRead,
             COALESCE(SUM(cache_write),0) AS cacheWrite, COALESCE(SUM(reasoning),0) AS reasoning, COALESCE(SUM(total),0) AS total
             FROM usage WHERE session_id = ?`,
          )
          .get(s.id) ?? { ...ZERO_USAGE })
      : { ...ZERO_USAGE };
    const q = this.queues.get(sessionKey);
    return {
      sessionKey,
      sessionId: s?.id ?? "",
      agentId: s?.agent_id ?? agentId ?? cfg.agents.default,
      model: this.resolveModel(sessionKey, agentId),
      ...(s?.model_override ? { modelOverride: s.model_override } : {}),
      messageCount: stats.messages,
      estimatedTokens: Math.ceil(stats.chars / 4),
      usage,
      createdAt: s?.created_at ?? 0,
      running: this.running.has(sessionKey),
      queued: q ? q.size : 0,
    };
  }

  queueDepth(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.size + q.pending;
    return n;
  }

  async drain(ms: number): Promise<void> {
    if (this.inflight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, ms)));
    await Promise.race([Promise.allSettled([...this.inflight]).then(() => undefined), timeout]);
    clearTimeout(timer);
    // Whatever is still running after the grace period is aborted; its partial text is stored.
    for (const r of this.running.values()) r.controller.abort(new Error("daemon shutting down"));
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 2000))]);
  }
}

/** The channel a session key belongs to (internal/session/keys.ts shapes). */
function channelOfKey(key: string): string {
  const p = parseSessionKey(key);
  if (p.kind === "dm" || p.kind === "group") return p.channel;
  return p.kind === "other" ? "unknown" : p.kind;
}

function toParts(text: string, images: { mime: string; data: string }[]): ContentPart[] {
  const parts: ContentPart[] = [];
  if (text) parts.push({ type: "text", text });
  for (const img of images)
    parts.push({ type: "image_url", image_url: { url: `data:${img.mime};base64,${img.data}` } });
  return parts;
}

/** Creates the host. */
export function createAgentHost(deps: AgentHostDeps): AgentHostImpl {
  return new AgentHostImpl(deps);
}
