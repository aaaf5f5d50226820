/**
 * The `dispatch` tool: run a validated task graph across agents (dispatch-run.ts). `mode: sync` runs it
 * inside the calling turn; `mode: background` runs it as a task of the task manager (the spec's
 * DispatchTool with TaskMgr): the turn goes on at once, progress lines and the final report are
 * announced to the chat like an async delegation, and `status`/`cancel` (here or in `delegate`) manage it.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../../tools/tool.js";
import { taskOrigin } from "./task-origin.js";
import type { CoreContext } from "../../runtime/context.js";
import type { Outbox } from "../../core/outbox.js";
import { listAgents, type AgentSource } from "../agents.js";
import { matchCapabilities } from "./capabilities.js";
import { validateGraph, TaskGraphError, type GraphTask } from "./task-graph.js";
import { DISPATCH_LABEL, type RunOutcome, type SubagentTaskManager } from "./task-manager.js";
import { cancelTaskText, taskStatusText } from "./task-actions.js";
import { runDispatchGraph, type DispatchGraph } from "./dispatch-run.js";

export type { DispatchRecord } from "./dispatch-run.js";

const taskSchema = z.object({
  id: z.string().min(1),
  agent: z.string().optional(),
  message: z.string().min(1),
  depends_on: z.array(z.string()).default([]),
  blocking: z.boolean().default(true),
  timeout_seconds: z.number().positive().max(3600).default(300),
});
const schema = z.object({
  action: z
    .enum(["run", "status", "cancel"])
    .default("run")
    .describe("run a graph, or check/cancel a background one"),
  tasks: z
    .array(taskSchema)
    .min(1)
    .optional()
    .describe("task graph (action run); use {{<id>.output}} to pass a dependency's output"),
  max_concurrent: z.number().int().min(1).max(20).optional(),
  mode: z
    .enum(["sync", "background"])
    .default("sync")
    .describe("sync waits for every result; background returns a task id and announces the report later"),
  task_id: z.string().optional().describe("task id (actions status, cancel)"),
});

/** The `notice` kind of a dispatch's progress lines (docs/gateway-protocol.md, docs/api.md). */
export const PROGRESS_KIND = "dispatch_progress";

export function createDispatchTool(
  ctx: CoreContext,
  tasks: SubagentTaskManager,
  outbox: Outbox,
  sources: AgentSource[] = [],
): Tool<typeof schema> {
  return defineTool({
    name: "dispatch",
    hint: "run tasks across agents in parallel",
    group: "subagents",
    description:
      "Run a graph of tasks across agents (parallel where dependencies allow) and collect every result. mode=background runs it as a background task and reports back later.",
    schema,
    async execute(args, signal, tctx) {
      if (args.action === "status") return taskStatusText(tasks, tctx.sessionKey, args.task_id);
      if (args.action === "cancel") return cancelTaskText(tasks, tctx.sessionKey, args.task_id);
      if (!args.tasks) throw new ToolError("TASKS_REQUIRED", "tasks: required for run");
      const cfg = ctx.config();
      let order: GraphTask[];
      try {
        order = validateGraph(args.tasks);
      } catch (err) {
        if (err instanceof TaskGraphError) throw new ToolError(err.code, err.message);
        throw err;
      }
      const depth = tctx.depth + 1;
      const maxDepth = cfg.agents.defaults.subagents.max_depth;
      if (depth > maxDepth)
        throw new ToolError(
          "recursion_depth_exceeded",
          `recursion_depth_exceeded: dispatch at depth ${depth} exceeds the limit of ${maxDepth}`,
        );
      const all = listAgents(cfg, sources).filter((a) => a.id !== tctx.agentId && a.enabled !== false);
      const agentOf = new Map<string, string>();
      for (const t of order) {
        const id = t.agent ?? matchCapabilities(all, t.message)[0]?.agentId;
        if (!id) throw new ToolError("NO_MATCHING_AGENT", `task ${t.id}: no agent matches; set agent`);
        if (!listAgents(cfg, sources).some((a) => a.id === id))
          throw new ToolError("AGENT_UNKNOWN", `task ${t.id}: unknown agent "${id}"`);
        if (!all.some((a) => a.id === id) && id !== tctx.agentId)
          throw new ToolError("AGENT_DISABLED", `task ${t.id}: agent "${id}" is disabled (enabled: false)`);
        agentOf.set(t.id, id);
      }
      const progress = cfg.agents.defaults.subagents.progress_updates;
      // A chat channel gets each line as a message; every surface that follows the session (the web
      // chat and console over the websocket, `/api` and `/chat/stream` streams) gets it as a
      // `dispatch_progress` notice: of the calling turn while it runs, else of the session on the bus.
      const deliver = (text: string): void => {
        if (tctx.replyTarget) void outbox.deliver(tctx.replyTarget, text).catch(() => undefined);
      };
      const sayInTurn = (text: string): void => {
        if (!progress) return;
        deliver(text);
        tctx.notify?.(PROGRESS_KIND, text);
      };
      const sayLater =
        (runId: string) =>
        (text: string): void => {
          if (!progress) return;
          deliver(text);
          ctx.bus.emit("chat", {
            sessionKey: tctx.sessionKey,
            agentId: tctx.agentId,
            channel: "subagent",
            event: { type: "notice", runId, kind: PROGRESS_KIND, text },
          });
        };
      const graph = (
        s: AbortSignal,
        graphId: string,
        say: (text: string) => void,
        onSession?: (key: string) => void,
      ): DispatchGraph => ({
        ctx,
        tasks,
        order,
        agentOf,
        limit: args.max_concurrent ?? cfg.agents.defaults.subagents.max_concurrent,
        depth,
        parentRequestId: tctx.requestId,
        originSessionKey: tctx.sessionKey,
        originAgentId: tctx.agentId,
        ...(tctx.replyTarget ? { replyTarget: tctx.replyTarget } : {}),
        signal: s,
        say,
        graphId,
        ...(tctx.withheld ? { withholdPrivate: true } : {}),
        ...(onSession ? { onSession } : {}),
      });
      const ids = order.map((t) => t.id).join(", ");
      if (args.mode === "background") {
        // The calling turn's signal is not passed on: the graph outlives the turn; `cancel` stops it.
        const id = tasks.startBackground(
          {
            agentId: DISPATCH_LABEL,
            message: `dispatch of ${order.length} tasks: ${ids}`,
            ...taskOrigin(tctx, depth),
          },
          DISPATCH_LABEL,
          async (taskSignal, taskId): Promise<RunOutcome> => {
            // The calling turn has ended (or soon will): progress is the session's, under the task's id.
            const say = sayLater(taskId);
            say(`Dispatching ${order.length} tasks in the background (task ${taskId}): ${ids}`);
            const r = await runDispatchGraph(
              graph(taskSignal, taskId, say, (key) => tasks.addSession(taskId, key)),
            );
            return {
              ok: !r.isError,
              text: r.content,
              ...(r.isError ? { error: "not every task finished" } : {}),
              ...(r.hostStopped ? { stopped: "host" as const } : {}),
            };
          },
        );
        return `Started background dispatch ${id} (${order.length} tasks: ${ids}). Progress and the report will be announced here; dispatch status or cancel with task_id ${id}.`;
      }
      sayInTurn(`Dispatching ${order.length} tasks: ${ids}`);
      const r = await runDispatchGraph(graph(signal, randomUUID().slice(0, 8), sayInTurn));
      return { content: r.content, isError: r.isError };
    },
  });
}
