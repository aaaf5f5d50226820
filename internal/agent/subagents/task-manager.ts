/**
 * Subagent task manager: runs delegated work synchronously or as persisted async tasks (an async
 * delegation, or a whole dispatch graph run in the background: the same rows, status, cancel and
 * announcement).
 *
 * Invariants:
 * - every async task is a row in `subagent_tasks` before it is queued; a restart marks queued and
 *   running tasks `interrupted` and tells the originating session instead of forgetting them;
 * - async tasks are limited per nesting depth (one p-queue per depth), so a nested task never waits on
 *   a slot held by one of its parents (no deadlock); sync calls never take a queue slot at all;
 * - results are announced to the originating session as a system event (never a fake user message),
 *   and the reply is delivered to the originating channel with retries; the announcement turn runs
 *   once when it succeeds (only a failed turn is re-run), so a flaky channel never makes the agent
 *   answer twice;
 * - a task whose turn is aborted by the host itself (daemon shutdown drain) is marked `interrupted`
 *   without announcing; the next start announces it, like a task left `running` by a kill -9;
 * - chains are bounded: a task started by the announcement turn of a task of chain n has chain n+1;
 *   one beyond `agents.defaults.subagents.max_chain` is refused (the model gets the reason as its
 *   tool result, the owner a message, the log a warning), so a model that re-dispatches on every
 *   announcement cannot keep a session busy forever.
 *
 * Over 300 lines on purpose: a task's whole life (queue, run, persist, announce, restart) shares
 * one store.
 */
import { randomUUID } from "node:crypto";
import PQueue from "p-queue";
import type { CoreContext } from "../../runtime/context.js";
import type { AgentHost } from "../../core/host.js";
import type { Outbox } from "../../core/outbox.js";
import { sleep } from "../../core/clock.js";
import { withoutAddresses } from "../../core/public-text.js";
import { ToolError } from "../../tools/tool.js";
import type { RunOutcome, RunRequest, TaskRow } from "./task-types.js";
import { DISPATCH_LABEL, taskSessionKey, taskSessions } from "./task-sessions.js";

export type { RunOutcome, RunRequest, TaskRow, TaskStatus } from "./task-types.js";

export { DISPATCH_LABEL, taskSessionKey } from "./task-sessions.js";

/** Waits between announcement attempts (turn or delivery): 1 s, 5 s, 30 s, then give up. */
export const ANNOUNCE_BACKOFF_MS: readonly number[] = [1000, 5000, 30_000];

export class SubagentTaskManager {
  private queues = new Map<number, PQueue>();
  private controllers = new Map<string, AbortController>();
  private maxRunningSeen = 0;
  private runningNow = 0;
  private closed = false;
  private inflight = new Set<Promise<void>>();
  /** Request id of a running announcement turn -> the chain of the task it announces. */
  private announcing = new Map<string, number>();
  private s;

  constructor(
    private ctx: CoreContext,
    private host: AgentHost,
    private outbox: Outbox,
  ) {
    const db = ctx.db;
    this.s = {
      insert: db.prepare(
        `INSERT INTO subagent_tasks (id, agent_id, message, model, status, depth, origin_session_key, origin_agent_id,
           origin_channel, reply_target, parent_request_id, chain, withhold_private, created_at)
         VALUES (@id, @agent_id, @message, @model, 'queued', @depth, @origin_session_key, @origin_agent_id,
           @origin_channel, @reply_target, @parent_request_id, @chain, @withhold_private, @created_at)`,
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
      unannounced: db.prepare<[], TaskRow>(
        "SELECT * FROM subagent_tasks WHERE (status = 'interrupted' AND announce_status IS NULL) OR (status IN ('done','failed','interrupted') AND announce_status = 'pending') ORDER BY created_at",
      ),
      interrupt: db.prepare(
        "UPDATE subagent_tasks SET status = 'interrupted', error = ?, ended_at = ? WHERE id = ? AND status IN ('queued','running')",
      ),
      // json_insert '$[#]' appends: the list grows as the graph's tasks start, so a task left
      // running by a restart is still named (and its taint still read) by the announcement.
      addSession: db.prepare(
        "UPDATE subagent_tasks SET sessions = json_insert(COALESCE(sessions, '[]'), '$[#]', ?) WHERE id = ?",
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

  /**
   * Marks tasks left over from a previous run as interrupted and tells their sessions (in the
   * background: `whenIdle()` waits for the announcements). Returns the tasks it announces.
   */
  async recoverInterrupted(): Promise<TaskRow[]> {
    const now = this.ctx.clock.now();
    for (const t of this.s.stale.all())
      this.s.interrupt.run("the daemon restarted while this task was running", now, t.id);
    const rows = this.s.unannounced.all();
    for (const row of rows) this.track(this.announce(row));
    return rows;
  }

  /** Resolves when no announcement is in progress (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Stops retrying announcements (daemon shutdown); unfinished ones are re-announced on the next start. */
  close(): void {
    this.closed = true;
  }

  private track(p: Promise<void>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Runs a child turn and waits for it (sync delegation, dispatch tasks). Never takes a queue slot. */
  async runSync(req: RunRequest, taskId: string = randomUUID()): Promise<RunOutcome> {
    const handle = this.host.submit({
      channel: "subagent",
      sessionKey: taskSessionKey(req.agentId, taskId),
      agentId: req.agentId,
      text: req.message,
      ...(req.model ? { model: req.model } : {}),
      parentRequestId: req.parentRequestId,
      depth: req.depth,
      ...(req.replyTarget ? { replyTarget: req.replyTarget } : {}),
      originLabel: `the ${req.originAgentId ?? "primary"} agent (delegated task)`,
      ...(req.withholdPrivate ? { withholdPrivate: true } : {}),
    });
    const onAbort = (): void => handle.abort("cancelled by the delegating agent");
    if (req.signal?.aborted) onAbort();
    else req.signal?.addEventListener("abort", onAbort, { once: true });
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
          stopped: "timeout",
          result: r,
        };
      if (r.finishReason === "aborted")
        return {
          ok: false,
          text: r.text,
          error: r.error?.message ?? "aborted",
          stopped: req.signal?.aborted ? "caller" : "host",
          result: r,
        };
      if (r.finishReason === "error") {
        // The model that delegated gets the failure without the provider's URL, host or port
        // (issue 46 item 6); the owner's log keeps it whole.
        const raw = r.error?.message ?? r.finishReason;
        this.ctx.logger.warn({ agent: req.agentId, taskId, err: raw }, "subagent turn failed");
        return { ok: false, text: withoutAddresses(r.text), error: withoutAddresses(raw), result: r };
      }
      return { ok: true, text: r.text, result: r };
    } finally {
      if (timer) this.ctx.clock.clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Queues an async task; returns its id at once. */
  startAsync(req: RunRequest): string {
    return this.enqueue(req, req.agentId, (signal, id) => this.runSync({ ...req, signal }, id));
  }

  /**
   * Queues background work that is not one child turn (a dispatch graph): persisted, listed, cancelled
   * and announced like an async delegation. `label` is what `status` shows as its agent (`dispatch`);
   * `work` gets the task's signal (aborted by `cancel`) and its id.
   */
  startBackground(
    req: RunRequest,
    label: string,
    work: (signal: AbortSignal, id: string) => Promise<RunOutcome>,
  ): string {
    return this.enqueue(req, label, work);
  }

  private enqueue(
    req: RunRequest,
    label: string,
    work: (signal: AbortSignal, id: string) => Promise<RunOutcome>,
  ): string {
    const parentChain = this.announcing.get(req.parentRequestId);
    const chain = parentChain === undefined ? 0 : parentChain + 1;
    const cap = this.ctx.config().agents.defaults.subagents.max_chain;
    if (chain > cap) this.refuseChain(req, chain, cap);
    const id = randomUUID().slice(0, 8);
    this.s.insert.run({
      id,
      agent_id: label,
      message: req.message,
      model: req.model ?? null,
      depth: req.depth,
      origin_session_key: req.originSessionKey,
      origin_agent_id: req.originAgentId ?? null,
      origin_channel: req.originChannel ?? null,
      reply_target: req.replyTarget ?? null,
      parent_request_id: req.parentRequestId,
      chain,
      withhold_private: req.withholdPrivate ? 1 : 0,
      created_at: this.ctx.clock.now(),
    });
    const controller = new AbortController();
    this.controllers.set(id, controller);
    void this.queueFor(req.depth).add(async () => {
      if (controller.signal.aborted || this.s.start.run(this.ctx.clock.now(), id).changes === 0) {
        this.controllers.delete(id);
        return;
      }
      this.runningNow++;
      this.maxRunningSeen = Math.max(this.maxRunningSeen, this.runningNow);
      let announce = true;
      try {
        const out = await work(controller.signal, id);
        const now = this.ctx.clock.now();
        if (controller.signal.aborted) this.s.finish.run("cancelled", out.text, "cancelled", now, id);
        else if (out.stopped === "host") {
          // Aborted by the host itself (shutdown drain), not by us: announced after the restart.
          this.s.interrupt.run("the daemon stopped while this task was running", now, id);
          announce = false;
        } else this.s.finish.run(out.ok ? "done" : "failed", out.text, out.error ?? null, now, id);
      } catch (err) {
        this.ctx.logger.warn({ taskId: id, err: (err as Error).message }, "subagent task failed");
        this.s.finish.run("failed", null, withoutAddresses((err as Error).message), this.ctx.clock.now(), id);
      } finally {
        this.runningNow--;
        this.controllers.delete(id);
      }
      const row = this.s.get.get(id);
      if (announce && row && row.status !== "cancelled") this.track(this.announce(row));
    });
    return id;
  }

  /** Stops a chain (see the invariants): logs, tells the owner, and throws the model's tool error. */
  private refuseChain(req: RunRequest, chain: number, cap: number): never {
    const why = `this session's background work has already started itself ${chain - 1} time${chain - 1 === 1 ? "" : "s"} in a row (each task started by the announcement of the one before), and agents.defaults.subagents.max_chain is ${cap}`;
    this.ctx.logger.warn(
      { session: req.originSessionKey, chain, maxChain: cap },
      "background task chain stopped at the cap",
    );
    if (req.replyTarget)
      this.track(
        this.outbox
          .deliver(
            req.replyTarget,
            `Stopped a chain of background tasks: ${why}. Nothing more was started; ask again to start new work.`,
          )
          .then(
            () => undefined,
            (err: unknown) =>
              this.ctx.logger.warn(
                { err: (err as Error).message },
                "could not tell the owner about a stopped chain",
              ),
          ),
      );
    throw new ToolError(
      "BACKGROUND_CHAIN_CAP",
      `Not started: ${why}. Do not start more background work from this announcement; report the results to the owner and let them ask for more.`,
    );
  }

  /** Records that background task `id` (a dispatch) ran work in `sessionKey` (see `announce`). */
  addSession(id: string, sessionKey: string): void {
    this.s.addSession.run(sessionKey, id);
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
    const limit = this.ctx.config().agents.defaults.subagents.max_concurrent;
    let q = this.queues.get(depth);
    if (!q) {
      q = new PQueue({ concurrency: limit });
      this.queues.set(depth, q);
    } else if (q.concurrency !== limit) q.concurrency = limit; // hot reload
    return q;
  }

  /**
   * Tells the originating session about a finished task (a system event; the agent writes the
   * reply) and delivers the reply to the originating channel. The turn and the delivery are retried
   * separately with backoff, so a delivery retry never re-runs the turn.
   */
  private async announce(row: TaskRow): Promise<void> {
    // Named so the owner and the model can open them (`familiar sessions show <key>`), and read as
    // the announcement's inputs: their taint comes with the result, whichever session it lands in.
    const sessions = taskSessions(row);
    const named = sessions.length
      ? `${row.agent_id === DISPATCH_LABEL ? "Task sessions" : "Session"}: ${sessions.join(", ")}.`
      : "";
    const what = row.agent_id === DISPATCH_LABEL ? "a dispatch" : `agent ${row.agent_id}`;
    const body =
      row.status === "done"
        ? `Background task ${row.id} (${what}) finished.${named ? ` ${named}` : ""} Result:\n${row.result ?? ""}`
        : `Background task ${row.id} (${what}) ended with status ${row.status}: ${row.error ?? "no details"}${named ? `\n${named}` : ""}${row.agent_id === DISPATCH_LABEL && row.result ? `\n${row.result}` : ""}`;
    this.s.announce.run("pending", null, row.id);
    let reply: string | undefined;
    let lastErr: string;
    for (let attempt = 0; ; attempt++) {
      try {
        if (reply === undefined) {
          const handle = this.host.submit({
            channel: row.origin_channel ?? "subagent",
            sessionKey: row.origin_session_key,
            ...(row.origin_agent_id ? { agentId: row.origin_agent_id } : {}),
            text: body,
            systemEvent: true,
            // The result is the subagent sessions' answer: their taint comes with it, whichever
            // session (a new one after /new) the announcement lands in.
            reads: { sessionKeys: sessions },
            // Announced into a shared chat: its prompt and tools still leave the private files out.
            ...(row.withhold_private ? { withholdPrivate: true } : {}),
            ...(row.reply_target ? { replyTarget: row.reply_target } : {}),
            extraSystem:
              "A background task you started has ended (see the system event). Tell the owner the outcome briefly.",
          });
          // Tasks this turn starts are the next link of this task's chain.
          this.announcing.set(handle.requestId, row.chain ?? 0);
          const r = await handle.result.finally(() => this.announcing.delete(handle.requestId));
          if (r.finishReason === "error") throw new Error(r.error?.message ?? "announcement turn failed");
          reply = r.text;
        }
        if (row.reply_target && reply) await this.outbox.deliver(row.reply_target, reply);
        this.s.announce.run("delivered", null, row.id);
        return;
      } catch (err) {
        lastErr = (err as Error).message;
        const wait = ANNOUNCE_BACKOFF_MS[attempt];
        if (wait === undefined || this.closed) break;
        this.ctx.logger.warn(
          { task: row.id, attempt: attempt + 1, err: lastErr },
          "announcing subagent result failed; retrying",
        );
        await sleep(this.ctx.clock, wait);
      }
    }
    // Shutting down before the turn ran: left `pending`, re-announced by the next start.
    if (this.closed && reply === undefined) return;
    this.s.announce.run("failed", lastErr, row.id);
    this.ctx.logger.error(
      { task: row.id, err: lastErr },
      "announcing subagent result failed permanently; kept for delegate status",
    );
  }
}
