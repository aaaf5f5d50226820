/**
 * Runs that did not happen at their instant: missed while the daemon was down, missed because the
 * clock jumped forward (a suspended laptop, an NTP step), or interrupted by a crash.
 *
 * Invariants:
 * - every scheduled instant ends in exactly one recorded outcome: a run (on time or late), or a
 *   `skipped` row; a late run or a skip after downtime covers all the instants it missed (`covers`),
 *   so a week off never fires a burst of runs;
 * - the job's missed-run policy decides: `run_once_late` runs once and the delivered message says how
 *   late, `skip_and_tell` records the skip and tells the owner once, `skip` records it;
 * - a run a crash interrupted (a `running` row at start) is resumed once by a `resume` run; a resume
 *   that is interrupted again is not resumed a second time: it is recorded failed and the owner told;
 * - `lastDueAt` moves past every instant handled here, and planning never goes back before it, so a
 *   clock stepped back never repeats a run.
 */
import { nextRunAfter } from "../config/schedule.js";
import type { Outbox } from "../core/outbox.js";
import type { CronRunRecord, CronState } from "./cron-store.js";
import {
  LATE_AFTER_MS,
  MISSED_COUNT_CAP,
  formatInstant,
  missedPolicy,
  missedSpan,
  type MissedSpan,
} from "./job.js";
import type { CronEntry } from "./cron-types.js";
import type { CronScope } from "./cron-scope.js";
import type { CronTriggers } from "./cron-triggers.js";
import { noticeTarget } from "./cron-reply-route.js";

/** Missed-run handling for the timers (clock) and the start (downtime, interrupted runs). */
export interface CronMissed {
  /** A timer fired for `dueAt`: on time within LATE_AFTER_MS, else the policy applies. */
  due(e: CronEntry, dueAt: number): void;
  /** Startup: resumes the job's interrupted run once, else applies the policy to instants missed while down. */
  catchUp(e: CronEntry, state: CronState, now: number): void;
  /** A job seen for the first time (or with a new schedule): a one-shot whose time passed is missed. */
  firstSight(e: CronEntry, now: number): void;
  /** Start: the runs a crash interrupted (marked `interrupted` by the store), to resume once each. */
  setInterrupted(runs: CronRunRecord[]): void;
}

const CAUSE = {
  down: "while the daemon was not running",
  clock: "because the clock jumped forward (a suspended machine or a clock step)",
} as const;

/** Creates the missed-run handling. */
export function createCronMissed(s: CronScope, runs: CronTriggers, outbox: Outbox): CronMissed {
  const { clock, log, store, ctx } = s;
  /** Per job, its newest run interrupted by the crash before this start. Emptied once used. */
  const interrupted = new Map<string, CronRunRecord>();

  function count(span: MissedSpan): string {
    const n = span.count >= MISSED_COUNT_CAP ? `at least ${span.count}` : String(span.count);
    return span.count === 1 ? "1 run" : `${n} runs`;
  }

  function tell(e: CronEntry, text: string): void {
    const target = noticeTarget(e.job, s.origins.get(e.job.id), s.places());
    if (!target) {
      log.warn({ job: e.job.id }, `cron job ${e.job.id}: nowhere to tell the owner: ${text}`);
      return;
    }
    void outbox
      .deliver(target, text)
      .catch((err: unknown) =>
        log.warn(
          { job: e.job.id, err: (err as Error).message },
          `cron job ${e.job.id}: could not tell ${target}: ${text}`,
        ),
      );
  }

  /** Applies the job's policy to missed instants. */
  function apply(e: CronEntry, span: MissedSpan, now: number, cause: keyof typeof CAUSE): void {
    const job = e.job;
    const policy = missedPolicy(job);
    if (policy === "run_once_late") {
      log.info(
        { job: job.id, due: span.first, covers: span.count },
        `cron job ${job.id}: running once, late, for ${count(span)} missed ${CAUSE[cause]}`,
      );
      void runs.trigger(e, "catch_up", span.first, {
        lateMs: now - span.first,
        covers: span.count,
        latestDue: span.latest,
        cause,
      });
      return;
    }
    const why = `missed ${CAUSE[cause]}; skipped by policy (missed: ${policy})`;
    store.startRun({
      jobId: job.id,
      trigger: cause === "down" ? "catch_up" : "schedule",
      dueAt: span.first,
      startedAt: now,
      status: "skipped",
      error: why,
      sessionKey: null,
      covers: span.count,
    });
    const st = runs.ensureState(e, now).state;
    const oneShot = job.at !== undefined;
    store.putState({
      ...st,
      lastDueAt: span.latest,
      ...(oneShot ? { completedAt: now, lastStatus: "missed", lastError: why } : {}),
    });
    if (oneShot) runs.completeOneShot(job);
    log.warn({ job: job.id, covers: span.count }, `cron job ${job.id}: ${count(span)} ${why}`);
    ctx.bus.emit("cron", { jobId: job.id, status: "skipped", detail: why });
    if (policy === "skip_and_tell")
      tell(
        e,
        `Scheduled job "${job.id}" missed ${count(span)} (due ${formatInstant(span.first, s.tz())}) ${CAUSE[cause]}; ` +
          `skipped as its policy says (missed: skip_and_tell). Details: familiar cron runs ${job.id}`,
      );
  }

  function due(e: CronEntry, dueAt: number): void {
    const now = clock.now();
    if (now - dueAt <= LATE_AFTER_MS || !e.schedule) {
      void runs.trigger(e, "schedule", dueAt);
      return;
    }
    const st = s.stateOf(e);
    apply(e, missedSpan(e.schedule, dueAt, now, st?.anchorAt ?? dueAt), now, "clock");
  }

  function resume(e: CronEntry, run: CronRunRecord, state: CronState, now: number): void {
    const due = run.dueAt ?? run.startedAt;
    // The instants missed since the interrupted one are covered by the same resumed run.
    const after = e.schedule ? missedSpan(e.schedule, due, now, state.anchorAt) : undefined;
    log.warn(
      { job: e.job.id, run: run.id },
      `cron job ${e.job.id}: resuming run #${run.id}, which a restart interrupted`,
    );
    void runs.trigger(e, "resume", due, {
      lateMs: now - due,
      covers: Math.max(after?.count ?? 1, run.covers),
      latestDue: Math.max(after?.latest ?? due, state.lastDueAt ?? due),
      cause: "resume",
      resumeOf: run.id,
    });
  }

  function catchUp(e: CronEntry, state: CronState, now: number): void {
    const run = interrupted.get(e.job.id);
    interrupted.delete(e.job.id);
    if (!e.schedule || !e.job.enabled || state.completedAt != null) return;
    if (run) {
      if (run.trigger !== "resume" && !store.wasResumed(run.id)) return resume(e, run, state, now);
      // Interrupted twice: it is not run a third time, and the owner hears about it once.
      const text = `Scheduled job "${e.job.id}" was interrupted by a restart twice (run #${run.id}) and is not run again. Details: familiar cron runs ${e.job.id}`;
      log.error({ job: e.job.id, run: run.id }, text);
      tell(e, text);
      ctx.bus.emit("cron", { jobId: e.job.id, status: "error", detail: "interrupted twice" });
      if (e.job.at !== undefined) {
        store.putState({ ...state, completedAt: now, lastStatus: "error", lastError: "interrupted twice" });
        runs.completeOneShot(e.job);
      }
      return;
    }
    const first = nextRunAfter(e.schedule, state.lastDueAt ?? state.anchorAt, state.anchorAt);
    if (first === undefined || first > now) return;
    apply(e, missedSpan(e.schedule, first, now, state.anchorAt), now, "down");
  }

  function setInterrupted(list: CronRunRecord[]): void {
    interrupted.clear();
    // Manual runs are not resumed (the owner asked once; the interruption is in their run list).
    for (const r of list) if (r.trigger !== "manual") interrupted.set(r.jobId, r);
  }

  function firstSight(e: CronEntry, now: number): void {
    if (e.schedule?.kind !== "at" || !e.job.enabled || e.schedule.at > now) return;
    apply(e, { first: e.schedule.at, latest: e.schedule.at, count: 1 }, now, "down");
  }

  return { due, catchUp, setInterrupted, firstSight };
}
