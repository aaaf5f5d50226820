/**
 * The `dispatch` tool: run a validated task graph across agents in topological order with a
 * concurrency limit. A failed blocking task cancels its dependents and everything still running; a
 * failed non-blocking task lets the rest continue (its dependents are skipped).
 */
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../../tools/tool.js";
import type { CoreContext } from "../../core/context.js";
import type { ChannelRegistry } from "../../channels/registry.js";
import { listAgents, type AgentSource } from "../agents.js";
import { matchCapabilities } from "./capabilities.js";
import { interpolate, validateGraph, TaskGraphError, type GraphTask } from "./task-graph.js";
import type { SubagentTaskManager } from "./task-manager.js";

const taskSchema = z.object({
  id: z.string().min(1),
  agent: z.string().optional(),
  message: z.string().min(1),
  depends_on: z.array(z.string()).default([]),
  blocking: z.boolean().default(true),
  timeout_seconds: z.number().positive().max(3600).default(300),
});
const schema = z.object({
  tasks: z.array(taskSchema).min(1).describe("task graph; use {{<id>.output}} to pass a dependency's output"),
  max_concurrent: z.number().int().min(1).max(20).optional(),
});

type TaskState = "pending" | "running" | "done" | "failed" | "cancelled" | "skipped";

export interface DispatchRecord {
  id: string;
  agent: string;
  status: TaskState;
  ms: number;
  output: string;
}

export function createDispatchTool(
  ctx: CoreContext,
  tasks: SubagentTaskManager,
  channels: ChannelRegistry,
  sources: AgentSource[] = [],
): Tool<typeof schema> {
  return defineTool({
    name: "dispatch",
    group: "subagents",
    description:
      "Run a graph of tasks across agents (parallel where dependencies allow) and collect every result.",
    schema,
    async execute(args, signal, tctx) {
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
      const all = listAgents(cfg, sources).filter((a) => a.id !== tctx.agentId);
      const agentOf = new Map<string, string>();
      for (const t of order) {
        const id = t.agent ?? matchCapabilities(all, t.message)[0]?.agentId;
        if (!id) throw new ToolError("NO_MATCHING_AGENT", `task ${t.id}: no agent matches; set agent`);
        if (!listAgents(cfg, sources).some((a) => a.id === id))
          throw new ToolError("AGENT_UNKNOWN", `task ${t.id}: unknown agent "${id}"`);
        agentOf.set(t.id, id);
      }
      const limit = args.max_concurrent ?? cfg.agents.defaults.subagents.max_concurrent;
      const progress = cfg.agents.defaults.subagents.progress_updates && tctx.replyTarget;
      const say = (text: string): void => {
        if (progress && tctx.replyTarget)
          void channels.deliver(tctx.replyTarget, text).catch(() => undefined);
      };
      say(`Dispatching ${order.length} tasks: ${order.map((t) => t.id).join(", ")}`);

      const state = new Map<string, TaskState>(order.map((t) => [t.id, "pending"]));
      const records = new Map<string, DispatchRecord>();
      const outputs = new Map<string, string>();
      const controllers = new Map<string, AbortController>();
      const abortAll = new AbortController();
      const onParentAbort = (): void => abortAll.abort();
      if (signal.aborted) abortAll.abort();
      else signal.addEventListener("abort", onParentAbort, { once: true });
      let running = 0;
      let peak = 0;
      let halted = false;

      await new Promise<void>((resolveAll) => {
        const pump = (): void => {
          if (halted || abortAll.signal.aborted) {
            for (const t of order) if (state.get(t.id) === "pending") mark(t, "cancelled", 0, "");
          }
          for (const t of order) {
            if (running >= limit || halted || abortAll.signal.aborted) break;
            if (state.get(t.id) !== "pending") continue;
            const deps = t.depends_on ?? [];
            if (deps.some((d) => ["failed", "cancelled", "skipped"].includes(state.get(d) ?? ""))) {
              mark(t, "skipped", 0, `skipped: a dependency did not finish`);
              continue;
            }
            if (!deps.every((d) => state.get(d) === "done")) continue;
            start(t);
          }
          if (running === 0 && [...state.values()].every((s) => s !== "pending" && s !== "running"))
            resolveAll();
          else if (running === 0 && !order.some((t) => state.get(t.id) === "pending" && canStart(t))) {
            for (const t of order) if (state.get(t.id) === "pending") mark(t, "skipped", 0, "skipped");
            resolveAll();
          }
        };
        const canStart = (t: GraphTask): boolean =>
          (t.depends_on ?? []).every((d) => state.get(d) === "done");
        const mark = (t: GraphTask, s: TaskState, ms: number, output: string): void => {
          state.set(t.id, s);
          records.set(t.id, { id: t.id, agent: agentOf.get(t.id) ?? "?", status: s, ms, output });
        };
        const start = (t: GraphTask): void => {
          state.set(t.id, "running");
          running++;
          peak = Math.max(peak, running);
          const c = new AbortController();
          controllers.set(t.id, c);
          const onAll = (): void => c.abort();
          abortAll.signal.addEventListener("abort", onAll, { once: true });
          const t0 = ctx.clock.now();
          void tasks
            .runSync({
              agentId: agentOf.get(t.id) ?? "",
              message: interpolate(t.message, outputs),
              depth,
              parentRequestId: tctx.requestId,
              originSessionKey: tctx.sessionKey,
              originAgentId: tctx.agentId,
              ...(tctx.replyTarget ? { replyTarget: tctx.replyTarget } : {}),
              timeoutMs: (t.timeout_seconds ?? 300) * 1000,
              signal: c.signal,
            })
            .then((out) => {
              const ms = ctx.clock.now() - t0;
              abortAll.signal.removeEventListener("abort", onAll);
              running--;
              if (out.ok) {
                outputs.set(t.id, out.text);
                mark(t, "done", ms, out.text);
                say(`✓ ${t.id} done (${agentOf.get(t.id)})`);
              } else {
                // Aborted because another blocking task failed or the parent turn stopped.
                const cancelled = c.signal.aborted && (halted || abortAll.signal.aborted);
                mark(t, cancelled ? "cancelled" : "failed", ms, out.error ?? "failed");
                say(`✗ ${t.id} ${cancelled ? "cancelled" : `failed: ${out.error ?? ""}`}`);
                if (!cancelled && (t.blocking ?? true)) {
                  halted = true;
                  for (const [id, ctl] of controllers)
                    if (id !== t.id && state.get(id) === "running") ctl.abort();
                }
              }
              pump();
            });
        };
        pump();
      });
      signal.removeEventListener("abort", onParentAbort);

      const lines = order.map((t) => {
        const r = records.get(t.id) ?? {
          status: state.get(t.id) ?? "cancelled",
          ms: 0,
          output: "",
          agent: agentOf.get(t.id) ?? "?",
        };
        const out = r.output.length > 4000 ? `${r.output.slice(0, 4000)}\n[... truncated]` : r.output;
        return `## ${t.id} (${r.agent}): ${r.status}, ${(r.ms / 1000).toFixed(1)} s\n${out}`;
      });
      const failed = order.filter((t) =>
        ["failed", "cancelled", "skipped"].includes(records.get(t.id)?.status ?? "cancelled"),
      ).length;
      return {
        content: `Dispatch finished: ${order.length - failed}/${order.length} tasks done (peak concurrency ${peak}).\n\n${lines.join("\n\n")}`,
        isError: halted || abortAll.signal.aborted,
      };
    },
  });
}
