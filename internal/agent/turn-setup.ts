/**
 * Turn setup: everything a turn needs before its first model call, built from the message, the agent
 * and the session: the model, the agent's tools, the history, the system prompt (with the agent's
 * prompt template rendered), the tool context and the loop guard.
 */
import type { InboundMessage } from "../core/host.js";
import type { AgentEvent } from "../core/agent-events.js";
import type { CoreContext } from "../runtime/context.js";
import type { ChatMessage, ContentPart } from "../models/types.js";
import type { ApprovalDecision, ApprovalRequest, ToolContext, ToolSet } from "../tools/tool.js";
import { answerOf, type AskOwner } from "./trace-spans.js";
import type { SessionRow, SessionStore } from "../session/session-store.js";
import type { AgentDef } from "./agents.js";
import type { AgentPromptFiles } from "./catalog/agent-prompt.js";
import { historyOf } from "./history-cache.js";
import type { AgentHostDeps } from "./host-types.js";
import type { LoopGuard } from "./loop.js";
import { createLoopDetector } from "./loop-detection/loop-detector.js";
import { withContextNote, type PromptBuilder } from "./prompt.js";
import { isEchoFallback } from "./echo-fallback.js";

const EMPTY_TOOLS: ToolSet = {
  specs: () => [],
  execute: async () => ({ content: "no tools available", isError: true }),
};

/** The pieces of the host turn setup reads. */
export interface SetupEnv {
  deps: AgentHostDeps;
  sessions: SessionStore;
  prompt: PromptBuilder;
  promptFiles: AgentPromptFiles;
}

export interface TurnSetup {
  modelRef: string | undefined;
  tools: ToolSet;
  toolNames: string[];
  /** Messages of history sent (for the turn log). */
  historyLength: number;
  /** The system prompt as built (stable across turns). */
  system: string;
  /** The system message sent: for CLI engines the volatile note (clock, origin) is appended. */
  systemText: string;
  /** Adds the volatile note to the newest message (model loop only); identity otherwise. */
  noted: (m: ChatMessage[]) => ChatMessage[];
  /** The system prompt followed by the history (the stored user message included). */
  messages: ChatMessage[];
  toolContext: ToolContext;
  loopGuard: LoopGuard | undefined;
}

/** Builds a turn's model input and context. */
export function setupTurn(
  env: SetupEnv,
  t: {
    msg: InboundMessage;
    agent: AgentDef;
    runId: string;
    requestId: string;
    sessionId: string;
    liveSession: SessionRow | undefined;
    userMessageId?: number | undefined;
    /** The turn's abort signal (questions asked under it are withdrawn when it ends). */
    signal?: AbortSignal;
    /** Gives the turn's global slot back while it waits for the owner. */
    park?: <R>(wait: () => Promise<R>) => Promise<R>;
    /** Records an approval question and its wait in the turn's trace (trace-spans.ts). */
    traceApproval?: (req: ApprovalRequest, ask: AskOwner) => Promise<ApprovalDecision>;
    /** The turn's event stream: a tool's progress notice goes out on it (ToolContext.notify). */
    emit?: (e: AgentEvent) => void;
  },
): TurnSetup {
  const { ctx } = env.deps;
  const { msg, agent, sessionId } = t;
  const cfg = ctx.config();
  const modelRef = msg.model ?? t.liveSession?.model_override ?? agent.model ?? undefined;
  const tools = env.deps.toolsFor?.(agent, msg) ?? EMPTY_TOOLS;
  const toolNames = tools.names?.() ?? tools.specs().map((s) => s.name);
  let history: ChatMessage[];
  if (msg.ephemeral) {
    history = msg.ephemeral.history.map((h): ChatMessage => {
      if (h.role === "tool")
        return {
          role: "tool",
          content: h.content,
          tool_call_id: h.tool_call_id,
          ...(h.name ? { name: h.name } : {}),
        };
      if (h.role === "assistant" && "tool_calls" in h)
        return { role: "assistant", content: h.content, tool_calls: h.tool_calls };
      return { role: h.role, content: h.content } as ChatMessage;
    });
    // `continue`: the history ends with the client's tool results; the model answers them.
    if (!msg.ephemeral.continue)
      history.push({ role: "user", content: msg.images?.length ? toParts(msg.text, msg.images) : msg.text });
  } else {
    // Kept between turns and extended by the rows stored since (history-cache.ts).
    history = historyOf(env.sessions.messagesView(sessionId), t.userMessageId);
  }
  // An agent's prompt file is a {{variable}} template rendered for this turn (catalog/agent-prompt.ts).
  const agentPrompt = env.promptFiles.render(agent, cfg, {
    agentId: agent.id,
    userInput: msg.text,
    channel: msg.channel,
    history,
    now: ctx.clock.now(),
  });
  const system = env.prompt.build({
    config: cfg,
    agent,
    ...(agentPrompt !== undefined ? { agentPrompt } : {}),
    ...(msg.lightContext || agent.light_context ? { light: true } : {}),
    ...(msg.withholdPrivate ? { withholdPrivate: true } : {}),
    ...(env.deps.skillsSection ? { skillsSection: env.deps.skillsSection(agent, toolNames) ?? "" } : {}),
    toolNames,
    ...(msg.extraSystem ? { extra: msg.extraSystem } : {}),
    now: ctx.clock.now(),
  });
  // The clock and the origin change every turn: for the model loop they follow the newest message,
  // so the system prompt and history stay a cacheable prefix; CLI engines get them in their prompt.
  const modelLoop = agent.engine === "model" && !isEchoFallback(agent);
  const note = env.prompt.volatile({
    config: cfg,
    ...(msg.originLabel ? { originLabel: msg.originLabel } : {}),
    now: ctx.clock.now(),
  });
  const noted = (m: ChatMessage[]): ChatMessage[] => (modelLoop ? withContextNote(m, note) : m);
  const systemText = modelLoop ? system : `${system}\n\n${note.split("\n").join("\n\n")}`;
  const toolContext: ToolContext = {
    sessionKey: msg.sessionKey,
    sessionId,
    agentId: agent.id,
    workspace: cfg.workspace,
    ...(msg.replyTarget ? { replyTarget: msg.replyTarget } : {}),
    ...(msg.approvalTarget ? { approvalTarget: msg.approvalTarget } : {}),
    requestId: t.requestId,
    depth: msg.depth ?? 0,
    logger: ctx.logger,
    ...(t.signal ? { signal: t.signal } : {}),
    ...(t.park ? { parkWhile: t.park } : {}),
    ...(t.emit ? { notify: notifier(t.emit, t.runId) } : {}),
    requestApproval: (req) => {
      const park = t.park ?? (<R>(wait: () => Promise<R>): Promise<R> => wait());
      const ask: AskOwner = () =>
        env.deps.requestApproval
          ? park(() =>
              env.deps.requestApproval!(msg.approvalTarget ?? msg.replyTarget, msg.sessionKey, req, {
                requestId: t.requestId,
                ...(t.signal ? { signal: t.signal } : {}),
              }),
            )
          : Promise.resolve({ decision: "denied", reason: "this host cannot ask the owner" });
      return t.traceApproval ? t.traceApproval(req, ask) : ask().then((a) => answerOf(a).decision);
    },
  };
  const loopGuard = env.deps.loopGuard ? env.deps.loopGuard(agent) : defaultLoopGuard(ctx, agent, t.runId);
  return {
    modelRef,
    tools,
    toolNames,
    historyLength: history.length,
    system,
    systemText,
    noted,
    messages: noted([{ role: "system", content: systemText }, ...history]),
    toolContext,
    loopGuard,
  };
}

/** A tool's progress line as a `notice` event of its turn (every surface that follows the turn sees it). */
function notifier(emit: (e: AgentEvent) => void, runId: string): (kind: string, text: string) => void {
  return (kind, text) => emit({ type: "notice", runId, kind, text });
}

/** Tool-loop detection, on by default (`agents.defaults.loop_detection`); every finding is logged. */
function defaultLoopGuard(ctx: CoreContext, agent: AgentDef, runId: string): LoopGuard | undefined {
  const cfg = ctx.config().agents.defaults.loop_detection;
  if (!cfg.enabled) return undefined;
  const detector = createLoopDetector(cfg);
  const logger = ctx.logger;
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

/** A user message with images as model content parts. */
export function toParts(text: string, images: { mime: string; data: string }[]): ContentPart[] {
  const parts: ContentPart[] = [];
  if (text) parts.push({ type: "text", text });
  for (const img of images)
    parts.push({ type: "image_url", image_url: { url: `data:${img.mime};base64,${img.data}` } });
  return parts;
}
