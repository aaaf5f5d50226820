/**
 * Runs a validated dispatch graph: topological order, a concurrency limit, each task a child turn
 * through the task manager. A failed blocking task cancels its dependents and everything still
 * running; a failed non-blocking task lets the rest continue (its dependents are skipped). Used by the
 * `dispatch` tool in the calling turn (sync) or as a background task (mode background).
 */
import type { CoreContext } from "../../runtime/context.js";
import { interpolate, type GraphTask } from "./task-graph.js";
import { taskSessionKey, type SubagentTaskManager } from "./task-manager.js";

type TaskState = "pending" | "running" | "done" | "failed" | "cancelled" | "skipped";

export interface DispatchRecord {
  id: string;
  agent: string;
  status: TaskState;
  ms: number;
  output: string;
  /** The session the task ran in (absent: it never started). */
  sessionKey?: string;
}

export interface DispatchGraph {
  ctx: CoreContext;
  tasks: SubagentTaskManager;
  order: GraphTask[];
  /** Task id -> agent id (resolved before the run). */
  agentOf: Map<string, string>;
  limit: number;
  /** Depth of the child turns. */
  depth: number;
  parentRequestId: string;
  originSessionKey: string;
  originAgentId: string;
  replyTarget?: string;
  /** Aborts every running task (the calling turn, or the background task's cancel). */
  signal: AbortSignal;
  /** Progress line for the chat (a no-op when progress updates are off). */
  say: (text: string) => void;
  /**
   * Names this run's task sessions: task `t` runs in `agent:<agent>:subagent:dm:<graphId>.<t>` (the
   * background task's id, or a fresh one for a sync run), so the report can name each.
   */
  graphId: string;
  /** The dispatching turn withholds the owner's private files (a shared chat): so do its tasks. */
  withholdPrivate?: boolean;
  /** Called as each task's session starts (a background dispatch records it for its announcement). */
  onSession?: (sessionKey: string) => void;
}

export interface DispatchResult {
  content: string;
  isError: boolean;
  /** A child turn was stopped by the host itself (shutdown drain). */
  hostStopped: boolean;
  /** The sessions the tasks that started ran in, in graph order. */
  sessionKeys: string[];
}

/** Runs the graph to the end and returns the report the model (or the announcement) gets. */
export async function runDispatchGraph(g: DispatchGraph): Promise<DispatchResult> {
  const state = new Map<string, TaskState>(g.order.map((t) => [t.id, "pending"]));
  const records = new Map<string, DispatchRecord>();
  const sessionOf = new Map<string, string>();
  const outputs = new Map<string, string>();
  const controllers = new Map<string, AbortController>();
  const abortAll = new AbortController();
  const onParentAbort = (): void => abortAll.abort();
  if (g.signal.aborted) abortAll.abort();
  else g.signal.addEventListener("abort", onParentAbort, { once: true });
  let running = 0;
  let peak = 0;
  let halted = false;
  let hostStopped = false;

  await new Promise<void>((resolveAll) => {
    const pump = (): void => {
      if (halted || abortAll.signal.aborted) {
        for (const t of g.order) if (state.get(t.id) === "pending") mark(t, "cancelled", 0, "");
      }
      for (const t of g.order) {
        if (running >= g.limit || halted || abortAll.signal.aborted) break;
        if (state.get(t.id) !== "pending") continue;
        const deps = t.depends_on ?? [];
        if (deps.some((d) => ["failed", "cancelled", "skipped"].includes(state.get(d) ?? ""))) {
          mark(t, "skipped", 0, `skipped: a dependency did not finish`);
          continue;
        }
        if (!deps.every((d) => state.get(d) === "done")) continue;
        start(t);
      }
      if (running === 0 && [...state.values()].every((s) => s !== "pending" && s !== "running")) resolveAll();
      else if (running === 0 && !g.order.some((t) => state.get(t.id) === "pending" && canStart(t))) {
        for (const t of g.order) if (state.get(t.id) === "pending") mark(t, "skipped", 0, "skipped");
        resolveAll();
      }
    };
    const canStart = (t: GraphTask): boolean => (t.depends_on ?? []).every((d) => state.get(d) === "done");
    const mark = (t: GraphTask, s: TaskState, ms: number, output: string): void => {
      state.set(t.id, s);
      const sessionKey = sessionOf.get(t.id);
      records.set(t.id, {
        id: t.id,
        agent: g.agentOf.get(t.id) ?? "?",
        status: s,
        ms,
        output,
        ...(sessionKey ? { sessionKey } : {}),
      });
    };
    const start = (t: GraphTask): void => {
      state.set(t.id, "running");
      running++;
      peak = Math.max(peak, running);
      const c = new AbortController();
      controllers.set(t.id, c);
      const onAll = (): void => c.abort();
      abortAll.signal.addEventListener("abort", onAll, { once: true });
      const t0 = g.ctx.clock.now();
      // Encoded: a graph's task id may hold ':' or spaces, which a session key cannot; distinct ids
      // stay distinct sessions.
      const runId = `${g.graphId}.${encodeURIComponent(t.id)}`;
      const agentId = g.agentOf.get(t.id) ?? "";
      const sessionKey = taskSessionKey(agentId, runId);
      sessionOf.set(t.id, sessionKey);
      g.onSession?.(sessionKey);
      void g.tasks
        .runSync(
          {
            agentId: g.agentOf.get(t.id) ?? "",
            message: interpolate(t.message, outputs),
            depth: g.depth,
            parentRequestId: g.parentRequestId,
            originSessionKey: g.originSessionKey,
            originAgentId: g.originAgentId,
            ...(g.replyTarget ? { replyTarget: g.replyTarget } : {}),
            timeoutMs: (t.timeout_seconds ?? 300) * 1000,
            signal: c.signal,
            ...(g.withholdPrivate ? { withholdPrivate: true } : {}),
          },
          runId,
        )
        .then((out) => {
          const ms = g.ctx.clock.now() - t0;
          abortAll.signal.removeEventListener("abort", onAll);
          running--;
          if (out.stopped === "host") hostStopped = true;
          if (out.ok) {
            outputs.set(t.id, out.text);
            mark(t, "done", ms, out.text);
            g.say(`✓ ${t.id} done (${g.agentOf.get(t.id)})`);
          } else {
            // Aborted because another blocking task failed or the parent turn stopped.
            const cancelled = c.signal.aborted && (halted || abortAll.signal.aborted);
            mark(t, cancelled ? "cancelled" : "failed", ms, out.error ?? "failed");
            g.say(`✗ ${t.id} ${cancelled ? "cancelled" : `failed: ${out.error ?? ""}`}`);
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
  g.signal.removeEventListener("abort", onParentAbort);

  const lines = g.order.map((t) => {
    const r = records.get(t.id) ?? {
      status: state.get(t.id) ?? "cancelled",
      ms: 0,
      output: "",
      agent: g.agentOf.get(t.id) ?? "?",
    };
    const out = r.output.length > 4000 ? `${r.output.slice(0, 4000)}\n[... truncated]` : r.output;
    const where = sessionOf.get(t.id);
    return `## ${t.id} (${r.agent}): ${r.status}, ${(r.ms / 1000).toFixed(1)} s${where ? `, session ${where}` : ""}\n${out}`;
  });
  const failed = g.order.filter((t) =>
    ["failed", "cancelled", "skipped"].includes(records.get(t.id)?.status ?? "cancelled"),
  ).length;
  return {
    hostStopped,
    sessionKeys: g.order.flatMap((t) => sessionOf.get(t.id) ?? []),
    content: `Dispatch finished: ${g.order.length - failed}/${g.order.length} tasks done (peak concurrency ${peak}).\n\n${lines.join("\n\n")}`,
    isError: halted || abortAll.signal.aborted,
  };
}
