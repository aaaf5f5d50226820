/**
 * Subagent task manager: runs delegated work synchronously or as persisted async tasks.
 *
 * Invariants:
 * - every async task is a row in `subagent_tasks` before it is queued; a restart marks queued and
 *   running tasks `interrupted` and tells the originating session instead of forgetting them;
 * - async tasks are limited per nesting depth (one p-queue per depth), so a nested task never waits on
 *   a slot held by one of its parents (no deadlock); sync calls never take a queue slot at all;
 * - results are announced to the originating session as a system event (never a fake user message),
 *   and the reply is delivered to the originating channel with retries.
 */
import { randomUUID } from "node:crypto";
import PQueue from "p-queue";
import type { CoreContext } from "../../core/context.js";
import type { AgentHost, TurnResult } from "../../core/host.js";
import type { ChannelRegistry } from "../../channels/registry.js";
import { sleep } from "../../core/clock.js";
import { sessionKeys } from "../../session/keys.js";

export type TaskStatus = "queued" | "running" | "done" | "failed" | "cancelled" | "interrupted";

export interface TaskRow {
  id: string;
  agent_id: string;
  message: string;
  model: string | null;
  status: TaskStatus;
  depth: number;
  origin_session_key: string;
  origin_agent_id: string | null;
  origin_channel: string | null;
  reply_target: string | null;
  parent_request_id: string | null;
  result: string | null;
  error: string | null;
  announce_status: string | null;
  announce_error: string | null;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
}

export interface RunRequest {
  agentId: string;
  message: string;
  model?: string;
  /** Depth of the new (child) turn. */
  depth: number;
  parentRequestId: string;
  originSessionKey: string;
  originAgentId?: string;
  originChannel?: string;
  replyTarget?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RunOutcome {
  ok: boolean;
  text: string;
  error?: string;
  result?: TurnResult;
}

const ANNOUNCE_BACKOFF_MS = [1000, 5000, 30_000];

export class SubagentTaskManager {
  private queues = new Map<number, PQueue>();
  private controllers = new Map<string, AbortController>();
  private maxRunningSeen = 0;
  private runningNow = 0;
  private s;

  constructor(
    private ctx: CoreContext,
    private host: AgentHost,
    private channels: ChannelRegistry,
  ) {
    const db = ctx.db;
    this.s = {
      insert: db.prepare(
        `INSERT INTO subagent_tasks (id, agent_id, message, model, status, depth, origin_session_key, origin_agent_id,
           origin_channel, reply_target, parent_request_id, created_at)
         VALUES (@id, @agent_id, @message, @model, 'queued', @depth, @origin_session_key, @origin_agent_id,
           @origin_channel, @reply_target, @parent_request_id, @created_at)`,
      ),
      get: db.prepare<[string], TaskRow>("SELECT * FROM subagent_tasks WHERE id = ?"),
      start: db.prepare(
        "UPDATE subagent_tasks SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'",
      ),
      finish: db.prepare(
        "UPDATE subagent_tasks SET status = ?, result = ?, error = ?, ended_at = ? WHERE id = ? AND status IN ('queued','running')",
      ),
      announce: db.prepare("UPDATE subagent_tasks SET announce_status = ?, announce_error = ? WHERE id = ?"),
      stale: db.prepare<[], TaskRow>("SELECT * FROM subagent_tasks WHERE status IN ('queued','running')"),
      interrupt: db.prepare(
        "UPDATE subagent_tasks SET status = 'interrupted', error = 'the daemon restarted while this task was running', ended_at = ? WHERE id = ?",
      ),
      recent: db.prepare<[string, number], TaskRow>(
        "SELECT * FROM subagent_tasks WHERE origin_session_key = ? ORDER BY created_at DESC LIMIT ?",
      ),
    };
  }

  /** Highest number of async tasks observed running at once (for tests and metrics). */
  peakConcurrency(): number {
    return this.maxRunningSeen;
  }

  /** Marks tasks left over from a previous run as interrupted and tells their sessions. */
  async recoverInterrupted(): Promise<TaskRow[]> {
    const stale = this.s.stale.all();
    for (const t of stale) this.s.interrupt.run(this.ctx.clock.now(), t.id);
    for (const t of stale) {
      const row = this.s.get.get(t.id);
      if (row) void this.announce(row);
    }
    return stale;
  }

  /** Runs a child turn and waits for it (sync delegation, dispatch tasks). Never takes a queue slot. */
  async runSync(req: RunRequest, taskId: string = randomUUID()): Promise<RunOutcome> {
    const handle = this.host.submit({
      channel: "subagent",
      sessionKey: sessionKeys.dm(req.agentId, "subagent", taskId),
      agentId: req.agentId,
      text: req.message,
      ...(req.model ? { model: req.model } : {}),
      parentRequestId: req.parentRequestId,
      depth: req.depth,
      ...(req.replyTarget ? { replyTarget: req.replyTarget } : {}),
      originLabel: `the ${req.originAgentId ?? "primary"} agent (delegated task)`,
    });
    const onAbort = (): void => handle.abort("cancelled by the delegating agent");
    req.signal?.addEventListener("abort", onAbort, { once: true });
    let timer: ReturnType<CoreContext["clock"]["setTimeout"]> | undefined;
    let timedOut = false;
    if (req.timeoutMs) {
      timer = this.ctx.clock.setTimeout(() => {
        timedOut = true;
        handle.abort("timed out");
      }, req.timeoutMs);
    }
    try {
      const r = await handle.result;
      if (timedOut)
        return {
          ok: false,
          text: r.text,
          error: `timed out after ${Math.round((req.timeoutMs ?? 0) / 1000)} s`,
          result: r,
        };
      if (r.finishReason === "error" || r.finishReason === "aborted")
        return { ok: false, text: r.text, error: r.error?.message ?? r.finishReason, result: r };
      return { ok: true, text: r.text, result: r };
    } finally {
      if (timer) this.ctx.clock.clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Queues an async task; returns its id at once. */
  startAsync(req: RunRequest): string {
    const id = randomUUID().slice(0, 8);
    this.s.insert.run({
      id,
      agent_id: req.agentId,
      message: req.message,
      model: req.model ?? null,
      depth: req.depth,
      origin_session_key: req.originSessionKey,
      origin_agent_id: req.originAgentId ?? null,
      origin_channel: req.originChannel ?? null,
      reply_target: req.replyTarget ?? null,
      parent_request_id: req.parentRequestId,
      created_at: this.ctx.clock.now(),
    });
    const controller = new AbortController();
    this.controllers.set(id, controller);
    void this.queueFor(req.depth).add(async () => {
      if (controller.signal.aborted) return;
      if (this.s.start.run(this.ctx.clock.now(), id).changes === 0) return;
      this.runningNow++;
      this.maxRunningSeen = Math.max(this.maxRunningSeen, this.runningNow);
      try {
        const out = await this.runSync({ ...req, signal: controller.signal }, id);
        const status: TaskStatus = controller.signal.aborted ? "cancelled" : out.ok ? "done" : "failed";
        this.s.finish.run(status, out.text, out.error ?? null, this.ctx.clock.now(), id);
      } catch (err) {
        this.s.finish.run("failed", null, (err as Error).message, this.ctx.clock.now(), id);
      } finally {
        this.runningNow--;
        this.controllers.delete(id);
      }
      const row = this.s.get.get(id);
      if (row && row.status !== "cancelled") void this.announce(row);
    });
    return id;
  }

  status(id: string): TaskRow | undefined {
    return this.s.get.get(id);
  }

  recent(originSessionKey: string, limit = 10): TaskRow[] {
    return this.s.recent.all(originSessionKey, limit);
  }

  cancel(id: string): boolean {
    const c = this.controllers.get(id);
    const row = this.s.get.get(id);
    if (!row || (row.status !== "queued" && row.status !== "running")) return false;
    c?.abort(new Error("cancelled"));
    this.s.finish.run("cancelled", null, "cancelled", this.ctx.clock.now(), id);
    return true;
  }

  private queueFor(depth: number): PQueue {
    let q = this.queues.get(depth);
    if (!q) {
      q = new PQueue({ concurrency: this.ctx.config().agents.defaults.subagents.max_concurrent });
      this.queues.set(depth, q);
    }
    return q;
  }

  /** Tells the originating session about a finished task and delivers the reply, with retries. */
  private async announce(row: TaskRow): Promise<void> {
    const body =
      row.status === "done"
        ? `Background task ${row.id} (agent ${row.agent_id}) finished. Result:\n${row.result ?? ""}`
        : `Background task ${row.id} (agent ${row.agent_id}) ended with status ${row.status}: ${row.error ?? "no details"}`;
    let lastErr = "";
    for (let attempt = 0; attempt <= ANNOUNCE_BACKOFF_MS.length; attempt++) {
      try {
        const r = await this.host.submit({
          channel: row.origin_channel ?? "subagent",
          sessionKey: row.origin_session_key,
          ...(row.origin_agent_id ? { agentId: row.origin_agent_id } : {}),
          text: body,
          systemEvent: true,
          ...(row.reply_target ? { replyTarget: row.reply_target } : {}),
          extraSystem:
            "A background task you started has ended (see the system event). Tell the owner the outcome briefly.",
        }).result;
        if (r.finishReason === "error") throw new Error(r.error?.message ?? "announcement turn failed");
        if (row.reply_target) await this.channels.deliver(row.reply_target, r.text);
        this.s.announce.run("delivered", null, row.id);
        return;
      } catch (err) {
        lastErr = (err as Error).message;
        const wait = ANNOUNCE_BACKOFF_MS[attempt];
        if (wait === undefined) break;
        this.ctx.logger.warn(
          { task: row.id, attempt: attempt + 1, err: lastErr },
          "announcing subagent result failed; retrying",
        );
        await sleep(this.ctx.clock, wait);
      }
    }
    this.s.announce.run("failed", lastErr, row.id);
    this.ctx.logger.error(
      { task: row.id, err: lastErr },
      "announcing subagent result failed permanently; kept for delegate status",
    );
  }
}
