/**
 * The tools service: builds the registry with every built-in tool, the approval manager, the skills
 * loader (hot reload) and the memory index, and runs the MCP manager. Other modules add their tools
 * with `registry.register(tool)` (cron, delegate, dispatch...).
 *
 * Heavy parts stay lazy: the MCP SDK loads only when a server is configured, chokidar only at start,
 * html-to-text only on the first HTML page fetched.
 */
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import type { ApprovalAnswer, ApprovalDecision, ApprovalRequest } from "../tools/tool.js";
import { ApprovalManager, type ApprovalDelivery } from "../tools/approvals.js";
import { ToolRegistry } from "../tools/registry.js";
import { createFsTools } from "../tools/fs-tools.js";
import { createExecTool } from "../tools/exec-tool.js";
import { createWebFetchTool } from "../tools/web-fetch-tool.js";
import { createSendMessageTool, createTimeTool } from "../tools/basic-tools.js";
import { McpManager } from "../tools/mcp/mcp-manager.js";
import { logSandboxMode } from "../tools/sandbox/sandbox-mode.js";
import { MemoryIndex } from "../memory/memory-index.js";
import { createMemoryTools } from "../memory/memory-tools.js";
import { SkillsLoader } from "../skills/skills-loader.js";
import { createSkillTool } from "../skills/skill-tool.js";
import { Containment } from "../tools/taint/containment.js";
import { embeddingLedger, type EmbeddingUsage } from "./embedding-ledger.js";

export interface ToolsServiceDeps {
  channels: ApprovalDelivery;
  approvals?: ApprovalManager;
  /** Bundled skills folder override (tests). */
  bundledSkillsDir?: string;
  /** Records embedding calls of the memory index (usage and cost). */
  usage?: EmbeddingUsage;
  /** First MCP reconnect delay (default 1000 ms). */
  mcpBaseBackoffMs?: number;
  /** The config file: never visible to a sandboxed command. */
  configFile?: string;
  /**
   * Runs work that is not on the way to /healthz (the skills watcher, the sandbox probe) once the
   * daemon listens; the daemon passes its own. Default: on the next turn of the event loop.
   */
  afterReady?: (begin: () => void) => void;
}

export interface ToolsParts {
  service: Service;
  registry: ToolRegistry;
  approvals: ApprovalManager;
  skills: SkillsLoader;
  memory: MemoryIndex;
  mcp: McpManager;
  /** Prompt-injection containment: taint, grants, tainted memory, the egress gate. */
  containment: Containment;
  /** Adapter for AgentHostDeps.requestApproval. */
  requestApproval: (
    target: string | undefined,
    sessionKey: string,
    req: ApprovalRequest,
    turn?: { requestId: string; signal?: AbortSignal },
  ) => Promise<ApprovalDecision | ApprovalAnswer>;
}

/** Builds the tools, skills, memory and MCP parts and the service that runs them. */
export function createToolsService(ctx: CoreContext, deps: ToolsServiceDeps): ToolsParts {
  const config = ctx.config;
  const registry = new ToolRegistry({ config, logger: ctx.logger });
  const approvals =
    deps.approvals ??
    new ApprovalManager({
      clock: ctx.clock,
      channels: deps.channels,
      timeoutS: () => ctx.config().tools.exec.approval_timeout_s,
      logger: ctx.logger,
    });
  const containment = new Containment({
    db: ctx.db,
    clock: ctx.clock,
    config,
    logger: ctx.logger,
    approvals,
    deliver: (target, text) => deps.channels.deliver(target, text, { markdown: false }),
  });
  const skills = new SkillsLoader({
    workspace: () => ctx.config().workspace,
    disabled: () => ctx.config().skills.disabled,
    ...(deps.bundledSkillsDir ? { bundledDir: deps.bundledSkillsDir } : {}),
    logger: ctx.logger,
  });
  const memory = new MemoryIndex(ctx.db, () => ctx.config().workspace, {
    config,
    logger: ctx.logger,
    clock: ctx.clock,
    // Embedding calls are billed like model calls: one ledger row each (agent "memory"), checked
    // against the budgets before the call (its cost is known in advance).
    ...(deps.usage ? embeddingLedger(ctx, deps.usage) : {}),
  });
  const mcp = new McpManager({
    config,
    clock: ctx.clock,
    logger: ctx.logger,
    register: (t) => registry.register(t),
    ...(deps.configFile ? { hide: [deps.configFile] } : {}),
    ...(deps.mcpBaseBackoffMs !== undefined ? { baseBackoffMs: deps.mcpBaseBackoffMs } : {}),
  });

  for (const t of createFsTools()) registry.register(t);
  registry.register(createExecTool(config, { hide: () => (deps.configFile ? [deps.configFile] : []) }));
  registry.register(createWebFetchTool(config));
  for (const t of createMemoryTools({ config, clock: ctx.clock, index: memory })) registry.register(t);
  registry.register(createTimeTool({ config, clock: ctx.clock }));
  registry.register(createSendMessageTool({ config, channels: deps.channels }));
  registry.register(createSkillTool(skills));

  let offConfig: (() => void) | undefined;
  let watching: Promise<void> | undefined;
  let stopped = false;
  let state: ServiceHealth["state"] = "starting";
  let detail: string | undefined;

  const service: Service = {
    name: "tools",
    async start() {
      offConfig = ctx.onConfig((_next, prev, changed) => {
        if (
          changed.some(
            (c) => c === "mcp" || c.startsWith("mcp.") || c === "tools" || c.startsWith("tools.exec"),
          ) ||
          prev.workspace !== ctx.config().workspace
        )
          void mcp
            .sync()
            .catch((err: unknown) => ctx.logger.warn({ err: (err as Error).message }, "mcp sync failed"));
        if (prev.workspace !== ctx.config().workspace)
          // The watcher is bound to the old workspace folder: watch the new one (this also reloads).
          void skills
            .close()
            .then(() => skills.reload())
            .then(() => skills.watch())
            .catch((err: unknown) =>
              ctx.logger.warn({ err: (err as Error).message }, "skills watcher restart failed"),
            );
        else if (changed.some((c) => c === "skills" || c.startsWith("skills."))) skills.reload();
        // A new embedding model (or provider URL) rebuilds the vectors in the background.
        if (changed.some((c) => c === "memory" || c.startsWith("memory.") || c.startsWith("models")))
          try {
            memory.refresh();
          } catch (err) {
            ctx.logger.warn({ err: (err as Error).message }, "memory index refresh failed");
          }
      });
      try {
        memory.refresh();
      } catch (err) {
        ctx.logger.warn({ err: (err as Error).message }, "memory index sync failed");
      }
      // Not on the way to /healthz (issue 38, measured): the skills watcher (chokidar and its first
      // scan) and the sandbox probe (bwrap run three times) start once the daemon listens. The probe is
      // cached, so an exec that comes first awaits the same probe; the skills are loaded already and
      // read once more when the watcher is ready, so an edit made meanwhile is not missed.
      (deps.afterReady ?? setImmediate)(() => {
        if (stopped) return;
        watching = skills
          .watch()
          .then(() => skills.reload())
          .catch((err: unknown) => {
            detail = `skills watcher: ${(err as Error).message}`;
          });
        void logSandboxMode(ctx.config(), ctx.logger).catch((err: unknown) =>
          ctx.logger.warn({ err: (err as Error).message }, "sandbox probe failed"),
        );
      });
      await mcp.sync();
      state = "ok";
    },
    async stop() {
      stopped = true;
      offConfig?.();
      approvals.denyAll();
      await watching; // a watcher still starting would otherwise outlive close()
      await Promise.all([skills.close(), mcp.stop(), memory.close()]);
      state = "disabled";
    },
    health() {
      const servers = mcp.health();
      const down = Object.entries(servers).filter(([, h]) => h.state !== "connected");
      return {
        state: state === "ok" && down.length ? "degraded" : state,
        ...(detail || down.length
          ? {
              detail: [
                detail,
                ...down.map(([n, h]) => `mcp ${n}: ${h.state}${h.lastError ? ` (${h.lastError})` : ""}`),
              ]
                .filter(Boolean)
                .join("; "),
            }
          : {}),
        tools: registry.list().length,
        skills: skills.list().length,
        pendingApprovals: approvals.list().length,
        mcp: servers,
      };
    },
  };

  return {
    service,
    registry,
    approvals,
    skills,
    memory,
    mcp,
    containment,
    // With the reason and who answered: the turn's trace shows the wait and how it ended.
    requestApproval: (target, sessionKey, req, turn) =>
      approvals.requestDetailed({
        replyTarget: target,
        sessionKey,
        summary: req.summary,
        kind: req.kind,
        ...(turn?.requestId ? { requestId: turn.requestId } : {}),
        ...(turn?.signal ? { signal: turn.signal } : {}),
      }),
  };
}
