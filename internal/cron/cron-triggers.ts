/**
 * Starting and recording cron runs: a due, caught-up or manual run becomes a `cron_runs` row and a
 * turn (through cron-runner.ts), at most one per job at a time; a run that falls due while the
 * previous one still runs is recorded as `skipped`, never queued. Also keeps each job's schedule
 * state row (reset when its schedule changes). Missed runs are decided in cron-missed.ts.
 */
import { sessionKeys } from "../session/keys.js";
import { scheduleKey } from "../config/schedule.js";
import type { CronRunRecord, CronState } from "./cron-store.js";
import type { CronJobDef, LateRun } from "./job.js";
import type { MainSessionTracker } from "./main-session.js";
import { executeRun, type RunnerDeps } from "./cron-runner.js";
import { entryKey, type CronEntry, type CronServiceDeps } from "./cron-types.js";
import type { CronScope } from "./cron-scope.js";

export type { LateRun } from "./job.js";

/** Starts runs and keeps schedule state. */
export interface CronTriggers {
  /** Starts a run of the entry now (or records it skipped when one is running). */
  trigger(
    e: CronEntry,
    kind: CronRunRecord["trigger"],
    dueAt: number | null,
    late?: LateRun,
  ): Promise<CronRunRecord>;
  /** Creates the state row, or resets it when the schedule changed (new anchor, no stale catch-up). */
  ensureState(e: CronEntry, now: number): { state: CronState; fresh: boolean };
  /** Marks a one-shot done for good (a runtime one is disabled in the store too). */
  completeOneShot(job: CronJobDef): void;
  /** The session (and agent) a job's runs use. */
  sessionFor(job: CronJobDef): { sessionKey: string; agentId: string | undefined };
}

/** Creates the run starter; `rearm` is called on the job's entry when a run ends. */
export function createCronTriggers(
  s: CronScope,
  deps: Pick<CronServiceDeps, "host" | "outbox" | "sessions">,
  mains: MainSessionTracker,
  rearm: (e: CronEntry) => void,
): CronTriggers {
  const { ctx, clock, log, store, entries } = s;
  const runner: RunnerDeps = {
    host: deps.host,
    outbox: deps.outbox,
    store,
    clock,
    log,
    bus: ctx.bus,
    tz: () => s.tz(),
    onOneShotDone: (job) => completeOneShot(job),
    origins: s.origins,
    places: () => s.places(),
    sessions: deps.sessions,
  };

  function ensureState(e: CronEntry, now: number): { state: CronState; fresh: boolean } {
    const key = e.schedule ? scheduleKey(e.schedule) : "";
    const st = store.state(e.job.id);
    if (st && st.scheduleKey === key) return { state: st, fresh: false };
    const state: CronState = {
      jobId: e.job.id,
      scheduleKey: key,
      anchorAt: now,
      lastDueAt: null,
      lastRunAt: st?.lastRunAt ?? null,
      lastEndAt: null,
      lastStatus: st?.lastStatus ?? null,
      lastError: null,
      failures: 0,
      completedAt: null,
    };
    store.putState(state);
    return { state, fresh: true };
  }

  function sessionFor(job: CronJobDef): { sessionKey: string; agentId: string | undefined } {
    if (job.session === "isolated") return { sessionKey: sessionKeys.cron(job.id), agentId: job.agent };
    const agentId = job.agent ?? ctx.config().agents.default;
    return { sessionKey: mains.keyFor(agentId), agentId };
  }

  function trigger(
    e: CronEntry,
    kind: CronRunRecord["trigger"],
    dueAt: number | null,
    late?: LateRun,
  ): Promise<CronRunRecord> {
    const job = e.job;
    const now = clock.now();
    const { sessionKey, agentId } = sessionFor(job);
    if (e.running) {
      const id = store.startRun({
        jobId: job.id,
        trigger: kind,
        dueAt,
        startedAt: now,
        status: "skipped",
        error: "the previous run was still running",
        sessionKey,
        covers: late?.covers ?? 1,
      });
      // The skipped instants are handled: they must not run again after a clock step back.
      const st = store.state(job.id);
      if (st && kind !== "manual") store.putState({ ...st, lastDueAt: late?.latestDue ?? dueAt ?? now });
      log.warn(
        { job: job.id, trigger: kind },
        `cron job ${job.id}: skipped, the previous run is still running`,
      );
      ctx.bus.emit("cron", { jobId: job.id, status: "skipped", detail: "previous run still running" });
      return Promise.resolve(store.run(id)!);
    }
    const runId = store.startRun({
      jobId: job.id,
      trigger: kind,
      dueAt,
      startedAt: now,
      status: "running",
      sessionKey,
      lateMs: late?.lateMs ?? null,
      covers: late?.covers ?? 1,
      resumeOf: late?.resumeOf ?? null,
    });
    const st = ensureState(e, now).state;
    store.putState({
      ...st,
      lastRunAt: now,
      lastDueAt: kind === "manual" ? st.lastDueAt : (late?.latestDue ?? dueAt ?? now),
    });
    ctx.bus.emit("cron", { jobId: job.id, status: "started" });
    log.info({ job: job.id, trigger: kind, sessionKey }, `cron job ${job.id}: run started`);
    const p = executeRun(
      runner,
      job,
      runId,
      sessionKey,
      agentId,
      late && dueAt != null ? { ...late, dueAt } : undefined,
    ).finally(() => {
      e.running = undefined;
      const cur = entries.get(job.id);
      if (cur) rearm(cur);
    });
    e.running = p;
    return p;
  }

  /** A runtime one-shot is disabled in its stored spec too, so every list shows it is done. */
  function completeOneShot(job: CronJobDef): void {
    const e = entries.get(job.id);
    if (e?.source !== "runtime") return;
    const next = { ...e.job, enabled: false };
    store.putRuntimeJob(next, clock.now());
    e.job = next;
    e.key = entryKey(next, s.tz());
  }

  return { trigger, ensureState, completeOneShot, sessionFor };
}
