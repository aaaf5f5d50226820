/**
 * Assembles the agent host from the daemon's parts: the model router, usage tracker, tool registry,
 * compaction, CLI engines, agent sources (workspace files and the API store) and subagents.
 *
 * Invariants:
 * - the memory flush before a compaction runs as a nested (depth 1), ephemeral turn: it never waits on
 *   the session queue the compacting turn already holds, and its reply is never delivered;
 * - agent files are watched from `start()` and the watcher is closed on `stop()`; CLI engine
 *   subprocesses are closed on `stop()` too.
 */
import { withoutPrivate } from "./private-context.js";
import { resumeInterruptedTurns } from "./interrupted-turns.js";
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import type { Outbox } from "../core/outbox.js";
import type { ModelRouter } from "../models/router.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { ApprovalAnswer, ApprovalDecision, ApprovalRequest, ToolSet } from "../tools/tool.js";
import type { UsageTracker } from "./usage/usage-tracker.js";
import { createAgentHost, type AgentHostImpl } from "./host.js";
import { findAgent, listAgents, type AgentDef, type AgentSource } from "./agents.js";
import { resolveContextWindow } from "../models/context-window.js";
import { normalizeUsage } from "../models/normalize-usage.js";
import { createHostCompactor } from "./compaction/host-compactor.js";
import { FLUSH_HISTORY_SHARE, fitFlushHistory } from "./compaction/memory-flush.js";
import { EngineRegistry } from "./engines/engine-registry.js";
import { FileAgentSource, workspaceToolCeiling } from "./catalog/file-agents.js";
import { ApiAgentStore } from "./catalog/api-agents.js";
import { AgentWindowWatch } from "./catalog/agent-windows.js";
import { configPromptProblems } from "./catalog/agent-prompt.js";
import { SubagentTaskManager } from "./subagents/task-manager.js";
import { createDelegateTool, subagentsPromptSection } from "./subagents/delegate-tool.js";
import { createDispatchTool } from "./subagents/dispatch-tool.js";
import { createBudgets, type Budgets } from "../budgets/budget-service.js";
import type { Containment } from "../tools/taint/containment.js";

/** What the host section hands to the rest of the daemon. */
/** The tools of an agent on a CLI engine: none of ours (the CLI has its own). */
const NO_TOOLS: ToolSet = {
  specs: () => [],
  execute: async () => ({ content: "this agent's engine runs its own tools", isError: true }),
};

export interface AgentHostParts {
  host: AgentHostImpl;
  fileAgents: FileAgentSource;
  apiAgents: ApiAgentStore;
  tasks: SubagentTaskManager;
  engines: EngineRegistry;
  budgets: Budgets;
  service: Service;
}

/** What the agent host uses of the tools service (built by the daemon's wiring). */
export interface AgentToolbox {
  registry: ToolRegistry;
  skills: { promptSection(): string | undefined };
  requestApproval: (
    target: string | undefined,
    sessionKey: string,
    req: ApprovalRequest,
    /** The asking turn: its abort withdraws the question. */
    turn?: { requestId: string; signal?: AbortSignal },
  ) => Promise<ApprovalDecision | ApprovalAnswer>;
  /** Prompt-injection containment; every tool call passes it when present. */
  containment?: Containment;
}

/** Tools whose calls can be sinks (sinks.ts): an agent with one of these is a delegation sink. */
const SINK_TOOLS = new Set([
  "send_message",
  "send_file",
  "exec",
  "cron",
  "write_file",
  "edit_file",
  "delegate",
  "dispatch",
]);

export interface AgentHostServiceDeps {
  router: ModelRouter;
  usage: UsageTracker;
  tools: AgentToolbox;
  outbox: Outbox;
}

/** Builds the agent host and the service that owns its background parts. */
export function createAgentHostService(ctx: CoreContext, deps: AgentHostServiceDeps): AgentHostParts {
  const { router, usage, tools, outbox } = deps;
  const fileAgents = new FileAgentSource(() => ctx.config(), ctx.logger);
  fileAgents.load();
  // Prompt files of config.yaml agents are checked at load and on every reload, like agent files.
  let configPrompts = configPromptProblems(ctx.config());
  const logConfigPrompts = (): void => {
    for (const e of configPrompts.errors) ctx.logger.error(e, `invalid agent prompt file: ${e.message}`);
    for (const w of configPrompts.warnings) ctx.logger.warn(w, `agent prompt file: ${w.message}`);
  };
  logConfigPrompts();
  ctx.onConfig((next) => {
    configPrompts = configPromptProblems(next);
    logConfigPrompts();
    // Clashes with config.yaml may have changed, or the workspace moved.
    void fileAgents.configChanged().catch((err: unknown) => {
      ctx.logger.warn({ err: (err as Error).message }, "agent files could not be reloaded");
    });
  });
  const apiAgents = new ApiAgentStore(ctx.db, () => ctx.clock.now());
  const sources: AgentSource[] = [fileAgents, apiAgents];
  // Workspace and API agents meet the same 16K/32K window rules as config.yaml agents: checked now,
  // when an agent file or API agent changes, and on reload; their own context_window counts at run time.
  const windows = new AgentWindowWatch(() => ctx.config(), ctx.logger, sources);
  const ownWindow = (agentId: string): number | undefined =>
    findAgent(ctx.config(), agentId, sources)?.context_window;
  router.useAgentWindows(ownWindow);
  windows.check();
  fileAgents.onChange(() => windows.check());
  apiAgents.onChange(() => windows.check());
  ctx.onConfig(() => windows.check());
  const engines = new EngineRegistry(ctx, normalizeUsage);
  const toolTokenCache = new WeakMap<object, number>();
  const toolsFor = (agent: AgentDef): ReturnType<ToolRegistry["forAgent"]> =>
    // An agent from a workspace file never gets more than the ceiling config.yaml sets (invariant 2).
    tools.registry.forAgent(
      agent.id,
      agent.tools,
      agent.source.startsWith("file:") ? workspaceToolCeiling(ctx.config()) : undefined,
    );

  // The flush needs the host, which needs the compactor: bound once the host exists.
  const late: { host?: AgentHostImpl } = {};
  const budgets = createBudgets(ctx, { usage, deliver: (target, text) => outbox.deliver(target, text) });
  const compactor = createHostCompactor({
    db: ctx.db,
    config: () => ctx.config(),
    // Summaries are checked against and recorded for the turn that needed them.
    model: budgets.compactionModel(router),
    logger: ctx.logger,
    now: () => ctx.clock.now(),
    contextWindow: (ref, agentId) =>
      resolveContextWindow(ctx.config(), ref ?? router.chain()[0] ?? "echo/echo", {
        id: agentId,
        context_window: ownWindow(agentId),
      }),
    // Tool specs go with every call; count them (chars / 4, like the default estimator).
    // The registry hands out the same ToolSet until tools or config change: count each set once.
    toolTokens: (agent) => {
      const set = toolsFor(agent);
      let n = toolTokenCache.get(set);
      if (n === undefined) {
        n = Math.ceil(JSON.stringify(set.specs()).length / 4);
        toolTokenCache.set(set, n);
      }
      return n;
    },
    memoryFlush: async ({ session, agent, modelRef, prompt }) => {
      const host = late.host;
      // Only when the agent can save memory: a flush turn without memory_write is a wasted model call.
      const canSave = toolsFor(agent)
        .specs()
        .some((s) => s.name === "memory_write");
      if (!host || !canSave) return;
      // The session is at its window (that is why it compacts): send only the newest history that
      // fits half of it, after the tools and the prompt, or the flush itself is refused (issue 46).
      const window = resolveContextWindow(ctx.config(), modelRef ?? router.chain()[0] ?? "echo/echo", {
        id: agent.id,
        context_window: ownWindow(agent.id),
      });
      const toolCost = Math.ceil(JSON.stringify(toolsFor(agent).specs()).length / 4);
      const budget = window * FLUSH_HISTORY_SHARE - toolCost - Math.ceil(prompt.length / 4);
      const history = fitFlushHistory(
        host.sessions
          .messages(session.id)
          .filter((m) => m.role === "user" || m.role === "assistant")
          .map((m) => ({ role: m.role as "user" | "assistant", content: m.content })),
        budget,
      );
      const handle = host.submit({
        channel: "compaction",
        sessionKey: session.key,
        agentId: agent.id,
        text: prompt,
        ...(modelRef ? { model: modelRef } : {}),
        depth: 1,
        silent: true,
        ephemeral: { history },
        toolFilter: (name) => name.startsWith("memory_"),
      });
      await handle.result;
    },
  });

  const containment = tools.containment;
  const host = createAgentHost({
    ctx,
    model: router,
    // CLI engines run their own tools: our tools, skills and their hints stay out of their prompt.
    // Every call of ours passes containment (a tainted session asks before a sink).
    // A shared chat (a group, a non-owner) gets no tool that reads the owner's private files.
    toolsFor: (agent, msg) => {
      if (agent.engine !== "model") return NO_TOOLS;
      const own = toolsFor(agent);
      const set = msg.withholdPrivate ? withoutPrivate(own, ctx.config().workspace) : own;
      return containment
        ? containment.wrap(set, {
            channel: msg.channel,
            sessionKey: msg.sessionKey,
            agentId: agent.id,
            replyTarget: msg.replyTarget,
            parentRequestId: msg.parentRequestId,
            taint: msg.taint,
          })
        : set;
    },
    ...(containment
      ? {
          taint: {
            admitted: (sessionId, requestId, msg) =>
              containment.admitted(sessionId, requestId, { ...msg, agentId: msg.agentId }),
            sourcesOf: (sessionId) => containment.sourcesOf(sessionId),
          },
        }
      : {}),
    skillsSection: (agent, toolNames) => {
      if (agent.engine !== "model") return undefined;
      const parts = [tools.skills.promptSection()];
      if (toolNames.includes("delegate") || toolNames.includes("dispatch"))
        parts.push(subagentsPromptSection(ctx, agent.id, sources));
      const text = parts.filter((p): p is string => !!p).join("\n\n");
      return text || undefined;
    },
    requestApproval: tools.requestApproval,
    recordUsage: (rec) => {
      usage.record(rec);
    },
    agentSources: sources,
    compactor,
    engines: engines.engines(),
    onReset: (key) => engines.reset(key),
    budget: budgets.guard,
    onCompacted: (key) => engines.reset(key),
  });

  late.host = host;
  if (containment) {
    containment.onNote = (requestId, note) =>
      host.traces.point({
        requestId,
        rootRequestId: host.rootOf.get(requestId) ?? requestId,
        depth: 0,
        kind: note.kind,
        name: note.name,
        meta: note.meta,
        ...(note.durationMs !== undefined ? { durationMs: note.durationMs } : {}),
      });
    containment.agentHasSinks = (agentId) => {
      const def = agentId ? listAgents(ctx.config(), sources).find((a) => a.id === agentId) : undefined;
      if (!def) return true;
      if (def.engine !== "model") return true;
      // Every tool it can run, deferred ones included.
      const set = toolsFor(def);
      const names = set.names?.() ?? set.specs().map((s) => s.name);
      return names.some((n) => SINK_TOOLS.has(n) || n.startsWith("mcp__") || n === "web_fetch");
    };
  }
  const tasks = new SubagentTaskManager(ctx, host, outbox);
  tools.registry.register(createDelegateTool(ctx, tasks, sources));
  tools.registry.register(createDispatchTool(ctx, tasks, outbox, sources));

  const service: Service = {
    name: "agents",
    async start() {
      await tasks.recoverInterrupted();
      // Submitted now, before the channels start, so they stay ahead of new messages; delivered later.
      void resumeInterruptedTurns({
        ctx,
        host,
        deliver: (target, text) => outbox.deliver(target, text),
      }).done;
      await fileAgents.watch().catch((err: unknown) => {
        // Watching is best effort (e.g. a read-only workspace): the files still load at start and reload.
        ctx.logger.warn({ err: (err as Error).message }, "agent files are not watched");
      });
    },
    async stop() {
      tasks.close();
      engines.close();
      await fileAgents.close();
    },
    health(): ServiceHealth {
      const errors = [...fileAgents.errors(), ...configPrompts.errors];
      const warnings = [...fileAgents.warnings(), ...configPrompts.warnings];
      return {
        state: errors.length ? "degraded" : "ok",
        ...(errors.length ? { detail: `${errors.length} invalid agent definition(s)`, errors } : {}),
        ...(warnings.length ? { warnings } : {}),
      };
    },
  };
  return { host, fileAgents, apiAgents, tasks, engines, budgets, service };
}
