/**
 * The heartbeat: every `heartbeat.every` the agent checks the owner's HEARTBEAT.md list in the light
 * context of the `heartbeat` session, and tells the owner only when something needs attention.
 *
 * Invariants:
 * - an idle heartbeat costs nothing: a missing, empty or headings/comments-only HEARTBEAT.md, or a time
 *   outside active hours, skips the run before any model call;
 * - runs never overlap: a tick while a run is in progress is recorded as skipped;
 * - a reply starting with HEARTBEAT_OK (plus at most 300 characters) is never delivered;
 * - a failing run is logged and recorded; the next tick comes on schedule regardless;
 * - every tick is a row in `heartbeat_runs` (time, skipped or ran, reason, tokens, delivered).
 *
 * Over 300 lines on purpose: one closure holds the timer, the active hours and the run; its state
 * is shared by all of it.
 */
import type { CoreContext, Service, ServiceHealth } from "../runtime/context.js";
import type { AgentHost } from "../core/host.js";
import type { Clock, TimerHandle } from "../core/clock.js";
import type { Outbox } from "../core/outbox.js";
import { sessionKeys } from "../session/keys.js";
import { formatDuration } from "../config/duration.js";
import { heartbeatSkipReason, isHeartbeatOk } from "./heartbeat-file.js";
import { withinActiveHours } from "./active-hours.js";

export interface HeartbeatServiceDeps {
  host: AgentHost;
  outbox: Outbox;
  /** Defaults to `ctx.clock`. */
  clock?: Clock;
}

/** One recorded heartbeat tick. */
export interface HeartbeatRun {
  id: number;
  at: number;
  endedAt: number | null;
  status: "skipped" | "ran" | "error";
  reason: string | null;
  tokens: number;
  delivered: boolean;
  target: string | null;
  outputPreview: string | null;
}

export interface HeartbeatService extends Service {
  /** When the next tick is due; undefined when the heartbeat is off. */
  nextRunAt(): number | undefined;
  recentRuns(limit?: number): HeartbeatRun[];
  /** Runs a tick now (same rules as a scheduled one) and resolves with its record. */
  runNow(): Promise<HeartbeatRun>;
  /** For `familiar status` (the gateway asks parts for `status()`). */
  status(): Record<string, unknown>;
}

/** The default instruction; HEARTBEAT.md itself is in the light context. */
export const DEFAULT_HEARTBEAT_PROMPT =
  "Heartbeat check. Go through HEARTBEAT.md (in your context) now and act on what is due. Do not repeat " +
  "tasks from earlier conversations that HEARTBEAT.md does not list. If nothing needs the owner's " +
  "attention, reply with exactly HEARTBEAT_OK. Otherwise reply with a short message for the owner.";

/** Longest single timer: long waits are re-checked so a clock step or a suspend is noticed. */
const MAX_TIMER_MS = 60 * 60_000;
const RUNS_KEPT = 1000;
const PREVIEW_CHARS = 500;

interface Row {
  id: number;
  at: number;
  ended_at: number | null;
  status: string;
  reason: string | null;
  tokens: number;
  delivered: number;
  target: string | null;
  output_preview: string | null;
}

export function createHeartbeatService(ctx: CoreContext, deps: HeartbeatServiceDeps): HeartbeatService {
  const clock = deps.clock ?? ctx.clock;
  const log = ctx.logger.child({ service: "heartbeat" });
  const db = ctx.db;
  const q = {
    insert: db.prepare(
      `INSERT INTO heartbeat_runs (at, ended_at, status, reason, tokens, delivered, target, output_preview)
       VALUES (?, ?, ?, ?, 0, 0, ?, NULL)`,
    ),
    finish: db.prepare(
      `UPDATE heartbeat_runs SET ended_at = ?, status = ?, reason = ?, tokens = ?, delivered = ?, target = ?,
       output_preview = ? WHERE id = ?`,
    ),
    recent: db.prepare<[number], Row>("SELECT * FROM heartbeat_runs ORDER BY id DESC LIMIT ?"),
    one: db.prepare<[number], Row>("SELECT * FROM heartbeat_runs WHERE id = ?"),
    lastAt: db.prepare<[], { at: number }>("SELECT at FROM heartbeat_runs ORDER BY id DESC LIMIT 1"),
    prune: db.prepare(
      `DELETE FROM heartbeat_runs WHERE id <= (SELECT id FROM heartbeat_runs ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    ),
  };
  let timer: TimerHandle | undefined;
  let dueAt: number | undefined;
  let running: Promise<HeartbeatRun> | undefined;
  let started = false;
  let offConfig: (() => void) | undefined;

  const every = (): number => ctx.config().heartbeat.every;

  function toRun(r: Row): HeartbeatRun {
    return {
      id: r.id,
      at: r.at,
      endedAt: r.ended_at,
      status: r.status as HeartbeatRun["status"],
      reason: r.reason,
      tokens: r.tokens,
      delivered: r.delivered === 1,
      target: r.target,
      outputPreview: r.output_preview,
    };
  }

  function record(at: number, status: HeartbeatRun["status"], reason: string, target: string | null): number {
    const id = Number(
      q.insert.run(at, status === "skipped" ? at : null, status, reason, target).lastInsertRowid,
    );
    if (id % 100 === 0) q.prune.run(RUNS_KEPT);
    return id;
  }

  function skip(at: number, reason: string, level: "debug" | "info" | "warn" = "debug"): HeartbeatRun {
    const id = record(at, "skipped", reason, null);
    log[level]({ reason }, `heartbeat skipped: ${reason}`);
    ctx.bus.emit("heartbeat", { status: "skipped", detail: reason });
    return toRun(q.one.get(id)!);
  }

  /** Schedules the next tick `every` after `from` (never in the past). */
  function arm(from: number): void {
    if (timer) clock.clearTimeout(timer);
    timer = undefined;
    dueAt = undefined;
    const ms = every();
    if (!started || ms <= 0) return;
    const now = clock.now();
    let next = from + ms;
    if (next <= now) next = now + ms;
    dueAt = next;
    setTimer();
  }

  function setTimer(): void {
    const delay = Math.max(0, Math.min((dueAt ?? 0) - clock.now(), MAX_TIMER_MS));
    timer = clock.setTimeout(onTimer, delay);
    timer.unref?.();
  }

  function onTimer(): void {
    timer = undefined;
    if (dueAt === undefined) return;
    if (clock.now() < dueAt) return setTimer();
    const due = dueAt;
    void tick();
    arm(due);
  }

  async function tick(): Promise<HeartbeatRun> {
    const now = clock.now();
    const cfg = ctx.config();
    const hb = cfg.heartbeat;
    if (running) return skip(now, "the previous run is still running", "warn");
    if (!withinActiveHours(now, hb.active_hours, cfg.timezone)) return skip(now, "outside active hours");
    const p = (async (): Promise<HeartbeatRun> => {
      const why = await heartbeatSkipReason(cfg.workspace);
      if (why) return skip(now, why);
      return execute(now);
    })().finally(() => {
      running = undefined;
    });
    running = p;
    return p;
  }

  async function execute(at: number): Promise<HeartbeatRun> {
    const hb = ctx.config().heartbeat;
    const target = hb.target === "last" ? (deps.outbox.lastTarget() ?? null) : hb.target;
    const id = record(at, "ran", "running", target);
    ctx.bus.emit("heartbeat", { status: "started" });
    let status: HeartbeatRun["status"] = "ran";
    let reason: string;
    let tokens = 0;
    let delivered = false;
    let text = "";
    try {
      const handle = deps.host.submit({
        channel: "heartbeat",
        sessionKey: sessionKeys.heartbeat(),
        ...(hb.agent ? { agentId: hb.agent } : {}),
        text: hb.prompt ?? DEFAULT_HEARTBEAT_PROMPT,
        lightContext: true,
        originLabel: "heartbeat",
        ...(hb.model ? { model: hb.model } : {}),
        ...(target && target !== "none" ? { replyTarget: target } : {}),
      });
      const result = await handle.result;
      tokens = result.treeUsage.total || result.usage.total;
      text = result.text;
      if (result.finishReason === "error" || result.finishReason === "aborted" || result.error) {
        status = "error";
        reason = result.error?.message ?? `the turn ended with ${result.finishReason}`;
      } else if (isHeartbeatOk(text)) reason = "HEARTBEAT_OK (not delivered)";
      else if (text.trim() === "") reason = "empty reply (not delivered)";
      else if (hb.target === "none") reason = "target is none (not delivered)";
      else if (!target) reason = "no last channel target known yet (not delivered)";
      else {
        try {
          await deps.outbox.deliver(target, text);
          delivered = true;
          reason = `delivered to ${target}`;
        } catch (err) {
          status = "error";
          reason = `delivery to ${target} failed: ${(err as Error).message}`;
        }
      }
    } catch (err) {
      status = "error";
      reason = (err as Error).message;
    }
    try {
      q.finish.run(
        clock.now(),
        status,
        reason,
        tokens,
        delivered ? 1 : 0,
        target,
        text ? text.slice(0, PREVIEW_CHARS) : null,
        id,
      );
    } catch (err) {
      log.error({ err: (err as Error).message }, "heartbeat: could not record a run");
    }
    if (status === "error") log.warn({ reason }, `heartbeat run failed: ${reason}`);
    else log.info({ tokens, delivered }, `heartbeat ran: ${reason}`);
    ctx.bus.emit("heartbeat", {
      status: status === "error" ? "error" : delivered ? "delivered" : "ok",
      detail: reason,
    });
    const row = q.one.get(id);
    return row
      ? toRun(row)
      : { id, at, endedAt: clock.now(), status, reason, tokens, delivered, target, outputPreview: null };
  }

  /** The first tick at or after `from` that falls inside active hours (what `status` calls next). */
  function nextActiveTick(from: number): number | undefined {
    const cfg = ctx.config();
    const ms = every();
    let t = from;
    // Ticks are `every` apart; a week of them is plenty to find the window (or to prove there is none).
    for (let i = 0; ms > 0 && i <= Math.ceil((7 * 86_400_000) / ms); i++, t += ms)
      if (withinActiveHours(t, cfg.heartbeat.active_hours, cfg.timezone)) return t;
    return undefined;
  }

  const service: HeartbeatService = {
    name: "heartbeat",
    async start() {
      started = true;
      const last = q.lastAt.get()?.at;
      arm(last !== undefined && last <= clock.now() ? last : clock.now());
      offConfig = ctx.onConfig((_next, _prev, changed) => {
        if (changed.includes("heartbeat")) arm(clock.now());
      });
      const ms = every();
      log.info(
        { every: ms, nextRunAt: dueAt },
        ms > 0 ? `heartbeat every ${formatDuration(ms)}` : "heartbeat off (heartbeat.every is 0)",
      );
    },
    async stop() {
      started = false;
      offConfig?.();
      if (timer) clock.clearTimeout(timer);
      timer = undefined;
      dueAt = undefined;
      await running?.catch(() => undefined);
    },
    health(): ServiceHealth {
      if (every() <= 0) return { state: "disabled", detail: "heartbeat.every is 0" };
      const last = q.recent.get(1);
      return {
        state: last?.status === "error" ? "degraded" : "ok",
        ...(last?.status === "error" ? { detail: `last run failed: ${last.reason ?? ""}` } : {}),
        nextRunAt: dueAt ?? null,
      };
    },
    nextRunAt: () => dueAt,
    recentRuns: (limit = 20) => q.recent.all(limit).map(toRun),
    runNow: () => tick(),
    status() {
      const ms = every();
      const next = dueAt !== undefined ? nextActiveTick(dueAt) : undefined;
      return {
        state: ms > 0 ? "ok" : "disabled",
        every: ms,
        target: ctx.config().heartbeat.target,
        running: running !== undefined,
        ...(next !== undefined ? { nextRunAt: next } : {}),
        recent: service.recentRuns(5),
      };
    },
  };
  return service;
}
