/**
 * The `delegate` tool: hand a message to another agent, synchronously or as a persisted async task;
 * `status` and `cancel` manage async tasks (background dispatches included). Delegations to an agent in
 * `agents.defaults.subagents.async_agents` (the spec's AsyncAgents) are always async: they never block
 * the turn. The depth limit is an error result, never a crash.
 */
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../../tools/tool.js";
import { taskOrigin } from "./task-origin.js";
import type { CoreContext } from "../../runtime/context.js";
import { listAgents, type AgentSource } from "../agents.js";
import { formatCapabilities, matchCapabilities } from "./capabilities.js";
import type { SubagentTaskManager } from "./task-manager.js";
import { cancelTaskText, taskStatusText } from "./task-actions.js";

const schema = z.object({
  action: z
    .enum(["run", "status", "cancel"])
    .default("run")
    .describe("run a task, or check/cancel an async one"),
  agent: z.string().optional().describe("agent id; chosen by capability match when omitted"),
  message: z.string().optional().describe("the task for the agent (action run)"),
  mode: z
    .enum(["sync", "async"])
    .default("sync")
    .describe("sync waits for the answer; async returns a task id (always async for some agents)"),
  model: z.string().optional().describe("model override <provider>/<model>"),
  task_id: z.string().optional().describe("task id (actions status, cancel)"),
});

export function createDelegateTool(
  ctx: CoreContext,
  tasks: SubagentTaskManager,
  sources: AgentSource[] = [],
): Tool<typeof schema> {
  return defineTool({
    name: "delegate",
    hint: "hand a task to another agent",
    group: "subagents",
    description:
      "Delegate a task to another agent (see the agents list in your instructions). mode=async runs it in the background and reports back later.",
    schema,
    async execute(args, signal, tctx) {
      const cfg = ctx.config();
      if (args.action === "status") return taskStatusText(tasks, tctx.sessionKey, args.task_id);
      if (args.action === "cancel") return cancelTaskText(tasks, tctx.sessionKey, args.task_id);
      if (!args.message) throw new ToolError("MESSAGE_REQUIRED", "message: required for run");
      const depth = tctx.depth + 1;
      const max = cfg.agents.defaults.subagents.max_depth;
      if (depth > max)
        throw new ToolError(
          "recursion_depth_exceeded",
          `recursion_depth_exceeded: delegation depth ${depth} exceeds the limit of ${max}`,
        );
      const agents = listAgents(cfg, sources).filter((a) => a.id !== tctx.agentId && a.enabled !== false);
      let agentId = args.agent;
      if (!agentId) {
        const best = matchCapabilities(agents, args.message)[0];
        if (!best)
          throw new ToolError(
            "NO_MATCHING_AGENT",
            "no agent's capabilities match this task; name an agent explicitly",
          );
        agentId = best.agentId;
      } else if (!listAgents(cfg, sources).some((a) => a.id === agentId)) {
        throw new ToolError(
          "AGENT_UNKNOWN",
          `agent: unknown agent "${agentId}" (known: ${agents.map((a) => a.id).join(", ") || "none"})`,
        );
      }
      // The default subagent model is a provider model: it means nothing to a cli/claude-cli agent.
      const target = listAgents(cfg, sources).find((a) => a.id === agentId);
      if (target?.enabled === false)
        throw new ToolError(
          "AGENT_DISABLED",
          `agent: "${agentId}" is disabled (enabled: false); pick another agent`,
        );
      const model =
        args.model ?? (target?.engine === "model" ? cfg.agents.defaults.subagents.model : undefined);
      const req = {
        agentId,
        message: args.message,
        ...(model ? { model } : {}),
        ...taskOrigin(tctx, depth),
        signal,
      };
      if (args.mode === "async" || cfg.agents.defaults.subagents.async_agents.includes(agentId)) {
        const id = tasks.startAsync(req);
        return `Started background task ${id} on agent ${agentId}. Its result will be announced here when it finishes.`;
      }
      const out = await tasks.runSync(req);
      if (!out.ok)
        throw new ToolError(
          "SUBAGENT_FAILED",
          `agent ${agentId} failed: ${out.error ?? "unknown error"}${out.text ? `\npartial output: ${out.text}` : ""}`,
        );
      return `[${agentId}] ${out.text}`;
    },
  });
}

/** A short prompt section listing delegate targets and their capabilities. */
export function subagentsPromptSection(
  ctx: CoreContext,
  selfId: string,
  sources: AgentSource[] = [],
): string | undefined {
  const others = listAgents(ctx.config(), sources).filter((a) => a.id !== selfId && a.enabled !== false);
  if (others.length === 0) return undefined;
  const lines = others.map((a) => {
    const caps = formatCapabilities(a.capabilities);
    return `- ${a.id}${a.description ? `: ${a.description}` : ""}${caps ? ` — ${caps}` : ""}`;
  });
  return `Agents you can delegate to (delegate tool):\n${lines.join("\n")}`;
}
