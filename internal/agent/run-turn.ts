/**
 * One turn, once its queue slot came: set up (turn-setup.ts), run the model loop or the agent's
 * engine while recording (turn-recorder.ts), store the final answer and end with `turn_end`.
 *
 * Invariant: resolves, never rejects, for failures of the loop or the store; the event stream always
 * ends with `turn_end`.
 */
import { APPROVAL_ANSWERED_NOTICE, APPROVAL_WAIT_NOTICE, type AgentEvent } from "../core/agent-events.js";
import type { InboundMessage, TurnResult } from "../core/host.js";
import { ZERO_USAGE } from "../core/usage.js";
import type { SessionRow } from "../session/session-store.js";
import { storeFailure } from "../store/db.js";
import type { AgentDef } from "./agents.js";
import { echoFallbackEngine, isEchoFallback } from "./echo-fallback.js";
import { runAgentLoop, type LoopOptions, type LoopOutcome } from "./loop.js";
import type { TraceRecorder } from "./trace.js";
import type { ParkSlot, TurnQueue } from "./turn-queue.js";
import { createTurnRecorder, type TreeAcc, type UsageWriter } from "./turn-recorder.js";
import { setupTurn, type SetupEnv } from "./turn-setup.js";
import { tracedApproval } from "./trace-spans.js";
import { TurnLog } from "./turn-log.js";
import type { Payer } from "../budgets/spend.js";

/** The host's parts a turn uses. */
export interface TurnEnv extends SetupEnv {
  traces: TraceRecorder;
  usage: UsageWriter;
  queue: TurnQueue;
  trees: Map<string, TreeAcc>;
  rootOf: Map<string, string>;
  payers: Map<string, Payer>;
}

export interface TurnInput {
  msg: InboundMessage;
  agent: AgentDef;
  session: SessionRow | undefined;
  runId: string;
  requestId: string;
  controller: AbortController;
  /** Gives the turn's global slot back while it waits for the owner (turn-queue.ts). */
  park?: ParkSlot;
  userMessageId?: number;
}

/** Runs one admitted turn; `onEvent` receives each of its events. */
export async function runTurn(
  env: TurnEnv,
  t: TurnInput,
  onEvent?: (e: AgentEvent) => void,
): Promise<TurnResult> {
  const { ctx } = env.deps;
  const { msg, agent, runId, requestId, controller } = t;
  // The session may have been compacted or reset while this turn waited; the stored user message
  // stays where it was committed.
  const session = t.session ? (env.sessions.get(t.session.id) ?? t.session) : undefined;
  const liveSession =
    session && session.successor_id ? (env.sessions.head(msg.sessionKey) ?? session) : session;
  const sessionId = liveSession?.id ?? "";
  const runKey = msg.ephemeral ? `ephemeral:${runId}` : msg.sessionKey;
  env.queue.setRunning(runKey, { controller, runId, requestId });
  const emit = (e: AgentEvent): void => {
    try {
      onEvent?.(e);
    } catch (err) {
      ctx.logger.warn({ err: (err as Error).message }, "turn event subscriber failed");
    }
    if (!msg.silent)
      ctx.bus.emit("chat", { sessionKey: msg.sessionKey, agentId: agent.id, channel: msg.channel, event: e });
  };
  const depth = msg.depth ?? 0;
  const rootId = env.rootOf.get(requestId) ?? requestId;
  env.traces.start({
    requestId,
    parentRequestId: msg.parentRequestId ?? null,
    rootRequestId: rootId,
    depth,
    kind: "turn",
    name: agent.id,
    sessionId: sessionId || null,
    agentId: agent.id,
  });
  // Containment: a tainted session's turn says so in its trace, with every source.
  const taint = sessionId ? env.deps.taint?.sourcesOf(sessionId) : undefined;
  if (taint?.length)
    env.traces.point({
      requestId,
      rootRequestId: rootId,
      depth,
      kind: "taint",
      name: `session tainted (${taint.length} source${taint.length === 1 ? "" : "s"})`,
      meta: { sources: taint },
    });
  emit({ type: "turn_start", runId, sessionKey: msg.sessionKey, sessionId, agentId: agent.id, requestId });
  const turnLog = new TurnLog(ctx.logger, {
    runId,
    requestId,
    channel: msg.channel,
    session: msg.sessionKey,
    agent: agent.id,
  });

  const setup = setupTurn(env, {
    msg,
    agent,
    runId,
    requestId,
    sessionId,
    liveSession,
    userMessageId: t.userMessageId,
    signal: controller.signal,
    park: waitingPark(t.park, (kind, text) => emit({ type: "notice", runId, kind, text })),
    emit,
    traceApproval: (req, ask) =>
      tracedApproval(
        env.traces,
        { requestId, rootRequestId: rootId, depth, sessionId: sessionId || null, agentId: agent.id },
        req,
        ask,
      ),
  });
  turnLog.start({ model: setup.modelRef, history: setup.historyLength, tools: setup.toolNames.length });
  const recorder = createTurnRecorder({
    ctx,
    sessions: env.sessions,
    traces: env.traces,
    usage: env.usage,
    compactor: env.deps.compactor,
    budget: env.deps.budget,
    msg,
    agent,
    runId,
    requestId,
    rootId,
    depth,
    sessionId,
    liveSession,
    tree: env.trees.get(rootId),
    modelRef: setup.modelRef,
    system: setup.systemText,
    noted: setup.noted,
    tools: setup.tools,
    turnLog,
    payer: env.payers.get(requestId) ?? {
      agentId: agent.id,
      channel: msg.channel,
      sessionKey: msg.ephemeral ? null : msg.sessionKey,
    },
    emit,
  });
  const loopOpts: LoopOptions = {
    runId,
    model: env.deps.model,
    ...(setup.modelRef ? { modelRef: setup.modelRef } : {}),
    tools: setup.tools,
    messages: setup.messages,
    signal: controller.signal,
    maxIterations: agent.max_iterations,
    ...(agent.max_tokens ? { maxTokens: agent.max_tokens } : {}),
    ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
    toolContext: setup.toolContext,
    hooks: recorder.hooks,
    ...(msg.client ? { client: msg.client } : {}),
    acceptsImages: acceptsImages(ctx.config(), setup.modelRef ?? ctx.config().models.primary),
  };
  if (setup.loopGuard) loopOpts.loopGuard = setup.loopGuard;

  let outcome = await runEngine(env, loopOpts, agent, msg.sessionKey, sessionId, emit);
  env.queue.clearRunning(runKey, runId);
  outcome = recorder.storeFinal(outcome);
  const finalStored = recorder.finalStored();

  if (outcome.finishReason === "aborted") emit({ type: "notice", runId, kind: "aborted", text: "Stopped." });
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
    env.traces.endRequest(requestId, outcome.finishReason === "error" ? "error" : "ok");
  } catch (err) {
    if (!storeFailure(err)) throw err;
  }
  const treeNow = env.trees.get(rootId);
  return {
    runId,
    requestId,
    sessionId: recorder.session()?.id ?? sessionId,
    text: outcome.text,
    finishReason: outcome.finishReason,
    usage: outcome.usage,
    treeUsage: treeNow ? { ...treeNow.usage } : outcome.usage,
    treeCost: treeNow?.cost ?? 0,
    treeCostEstimatedCalls: treeNow?.estimatedCalls ?? 0,
    subCalls: treeNow?.subCalls ?? 0,
    ...(outcome.model ? { model: outcome.model } : {}),
    ...(outcome.error ? { error: outcome.error } : {}),
    ...(t.userMessageId !== undefined ? { userMessageId: t.userMessageId } : {}),
    ...(finalStored !== undefined ? { assistantMessageId: finalStored } : {}),
    ...(outcome.toolCalls?.length ? { toolCalls: outcome.toolCalls } : {}),
  };
}

/** Runs the model loop or the agent's engine, forwarding events; a failure becomes an error outcome. */
async function runEngine(
  env: TurnEnv,
  loopOpts: LoopOptions,
  agent: AgentDef,
  sessionKey: string,
  sessionId: string,
  emit: (e: AgentEvent) => void,
): Promise<LoopOutcome> {
  const { ctx } = env.deps;
  const runId = loopOpts.runId;
  const engine = isEchoFallback(agent)
    ? echoFallbackEngine
    : agent.engine !== "model"
      ? env.deps.engines?.[agent.engine]
      : undefined;
  try {
    if (!engine && agent.engine !== "model")
      throw new Error(`engine "${agent.engine}" of agent "${agent.id}" is not available`);
    // The model loop checks the budget before each call; other engines are checked once up front.
    const stop = engine && !isEchoFallback(agent) ? loopOpts.hooks?.gate?.(loopOpts.messages, 1) : undefined;
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
        ? engine({ ...loopOpts, agent, sessionKey, sessionId })
        : runAgentLoop(loopOpts);
    for (;;) {
      const step = await gen.next();
      if (step.done) return step.value;
      emit(step.value);
    }
  } catch (err) {
    const store = storeFailure(err);
    if (store) ctx.logger.error({ code: store.error.code, runId }, `turn failed: ${store.error.message}`);
    const code = store?.error.code ?? "AGENT_ERROR";
    const message = store?.userText ?? `Something went wrong while answering: ${(err as Error).message}`;
    emit({ type: "error", runId, code, message });
    return {
      text: message,
      finishReason: "error",
      usage: { ...ZERO_USAGE },
      iterations: 0,
      error: { code, message },
    };
  }
}

/** False only for a model the config declares `vision: false` (`models.providers.<p>.models.<m>`). */
function acceptsImages(cfg: ReturnType<TurnEnv["deps"]["ctx"]["config"]>, ref: string | undefined): boolean {
  if (!ref) return true;
  const i = ref.indexOf("/");
  if (i <= 0) return true;
  return cfg.models.providers[ref.slice(0, i)]?.models[ref.slice(i + 1)]?.vision !== false;
}

/**
 * The turn's park (its slot given back while it waits for the owner), announcing the wait: a
 * {@link APPROVAL_WAIT_NOTICE} before, an {@link APPROVAL_ANSWERED_NOTICE} once it settled, so a
 * chat stops "typing…" while nobody but the owner can move the turn on.
 */
function waitingPark(park: ParkSlot | undefined, notice: (kind: string, text: string) => void): ParkSlot {
  return async <R>(wait: () => Promise<R>): Promise<R> => {
    notice(APPROVAL_WAIT_NOTICE, "Waiting for the owner's answer…");
    try {
      return await (park ? park(wait) : wait());
    } finally {
      notice(APPROVAL_ANSWERED_NOTICE, "Answered; going on.");
    }
  };
}
