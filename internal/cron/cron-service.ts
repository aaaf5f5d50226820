/**
 * The cron scheduler. Jobs come from `cron.jobs` (reconciled on every config reload) and from runtime
 * creation (tool, gateway, CLI; persisted in `cron_jobs`). Every wait is a timer on the Clock, so a
 * FakeClock drives everything in tests; croner only computes instants.
 *
 * Invariants:
 * - at most one run per job at a time: a run that falls due while the previous still runs is recorded
 *   as `skipped` and logged, never queued behind it;
 * - every run is a row in `cron_runs` (start, end, status, error, tokens, output preview); a run left
 *   `running` by a crash is marked interrupted at the next start;
 * - a failing job backs off (1, 5, 15, 60 min) and keeps its last error until a run succeeds;
 * - with `catch_up: true`, a run missed while the daemon was down runs once at start;
 * - a one-shot `at` job is completed after it ran (or after AT_MAX_ATTEMPTS failures) and never again.
 *
 * Over 300 lines on purpose: the scheduler's timers, reconciliation and runs share one set of
 * entries (types and views are in cron-types.ts).
 */
import type { CoreContext, ServiceHealth } from "../runtime/context.js";
import { systemClock, type TimerHandle } from "../core/clock.js";
import { sessionKeys } from "../session/keys.js";
import { CronStore, type CronRunRecord, type CronState } from "./cron-store.js";
import { CronError, jobSchedule, parseJobInput, plannedNext, type CronJobDef } from "./job.js";
import { nextRunAfter, scheduleKey } from "../config/schedule.js";
import { MainSessionTracker, kvMainSessionStore } from "./main-session.js";
import { executeRun, type RunnerDeps } from "./cron-runner.js";
import {
  MAX_TIMER_MS,
  entryKey,
  jobView,
  makeEntry,
  type CronEntry,
  type CronService,
  type CronServiceDeps,
} from "./cron-types.js";

export type { CronJobView, CronService, CronServiceDeps } from "./cron-types.js";

export function createCronService(ctx: CoreContext, deps: CronServiceDeps): CronService {
  const clock = deps.clock ?? ctx.clock;
  const pollClock = deps.pollClock ?? systemClock;
  const pollMs = deps.pollIntervalMs ?? 3000;
  const log = ctx.logger.child({ service: "cron" });
  const store = new CronStore(ctx.db);
  const mains = new MainSessionTracker(
    ctx.bus,
    deps.outbox,
    kvMainSessionStore(ctx.db, () => clock.now()),
  );
  const entries = new Map<string, CronEntry>();
  const runner: RunnerDeps = {
    host: deps.host,
    outbox: deps.outbox,
    store,
    clock,
    log,
    bus: ctx.bus,
    onOneShotDone: (job) => completeOneShot(job),
  };
  let started = false;
  let pollTimer: TimerHandle | undefined;
  let dataVersion = 0;
  let offConfig: (() => void) | undefined;

  const tz = (): string => ctx.config().timezone;
  const enabled = (): boolean => ctx.config().cron.enabled;

  function stateOf(e: CronEntry): CronState | undefined {
    return store.state(e.job.id);
  }

  /** Creates the state row, or resets it when the schedule changed (new anchor, no stale catch-up). */
  function ensureState(e: CronEntry, now: number): { state: CronState; fresh: boolean } {
    const key = e.schedule ? scheduleKey(e.schedule) : "";
    const s = store.state(e.job.id);
    if (s && s.scheduleKey === key) return { state: s, fresh: false };
    const state: CronState = {
      jobId: e.job.id,
      scheduleKey: key,
      anchorAt: now,
      lastDueAt: null,
      lastRunAt: s?.lastRunAt ?? null,
      lastEndAt: null,
      lastStatus: s?.lastStatus ?? null,
      lastError: null,
      failures: 0,
      completedAt: null,
    };
    store.putState(state);
    return { state, fresh: true };
  }

  function disarm(e: CronEntry): void {
    if (e.timer) clock.clearTimeout(e.timer);
    e.timer = undefined;
    e.dueAt = undefined;
  }

  function arm(e: CronEntry): void {
    disarm(e);
    if (!started || !enabled() || !e.schedule || entries.get(e.job.id) !== e) return;
    const next = plannedNext(e.job, e.schedule, stateOf(e), clock.now());
    if (next === undefined) return;
    e.dueAt = next;
    setTimer(e);
  }

  function setTimer(e: CronEntry): void {
    const delay = Math.max(0, Math.min((e.dueAt ?? 0) - clock.now(), MAX_TIMER_MS));
    e.timer = clock.setTimeout(() => onTimer(e), delay);
    e.timer.unref?.();
  }

  function onTimer(e: CronEntry): void {
    e.timer = undefined;
    if (entries.get(e.job.id) !== e || e.dueAt === undefined) return;
    if (clock.now() < e.dueAt) return setTimer(e);
    const due = e.dueAt;
    void trigger(e, "schedule", due);
    arm(e);
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
      });
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
    });
    const st = ensureState(e, now).state;
    store.putState({ ...st, lastRunAt: now, lastDueAt: kind === "manual" ? st.lastDueAt : (dueAt ?? now) });
    ctx.bus.emit("cron", { jobId: job.id, status: "started" });
    log.info({ job: job.id, trigger: kind, sessionKey }, `cron job ${job.id}: run started`);
    const p = executeRun(runner, job, runId, sessionKey, agentId).finally(() => {
      e.running = undefined;
      const cur = entries.get(job.id);
      if (cur) arm(cur);
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
    e.key = entryKey(next, tz());
  }

  /** Startup: runs missed while down (catch_up), or marks a missed one-shot as missed. */
  function catchUp(e: CronEntry, state: CronState, now: number): void {
    if (!e.schedule || !e.job.enabled || state.completedAt != null) return;
    const missed = nextRunAfter(e.schedule, state.lastDueAt ?? state.anchorAt, state.anchorAt);
    if (missed === undefined || missed > now) return;
    if (e.job.catch_up) {
      log.info({ job: e.job.id, missed }, `cron job ${e.job.id}: running once for a run missed while down`);
      void trigger(e, "catch_up", missed);
    } else if (e.schedule.kind === "at") {
      store.startRun({
        jobId: e.job.id,
        trigger: "schedule",
        dueAt: missed,
        startedAt: now,
        status: "skipped",
        error: "missed while the daemon was down (catch_up is off)",
        sessionKey: null,
      });
      store.putState({
        ...state,
        completedAt: now,
        lastStatus: "missed",
        lastError: "missed while the daemon was down",
      });
      log.warn({ job: e.job.id }, `cron job ${e.job.id}: its one-shot time passed while the daemon was down`);
    }
  }

  /** Brings the entries of one source in line with `desired`: adds, changes and removes. */
  function reconcile(
    source: CronEntry["source"],
    desired: CronJobDef[],
    invalid: { id: string; error: string }[],
    atStart: boolean,
  ): void {
    const now = clock.now();
    const want = new Set<string>();
    const upsert = (job: CronJobDef, problem?: string): void => {
      want.add(job.id);
      const old = entries.get(job.id);
      if (old && old.source !== source) {
        if (source === "runtime") {
          log.warn(
            { job: job.id },
            `cron: runtime job ${job.id} is shadowed by the config job of the same id`,
          );
          return;
        }
        log.warn({ job: job.id }, `cron: config job ${job.id} replaces the runtime job of the same id`);
      }
      if (old && old.source === source && old.key === entryKey(job, tz()) && !problem) return;
      const e = makeEntry(tz(), job, source, problem);
      e.running = old?.running;
      if (old) disarm(old);
      entries.set(job.id, e);
      if (e.problem) {
        log.error({ job: job.id }, `cron job ${job.id} cannot be scheduled: ${e.problem}`);
        return;
      }
      const { state, fresh } = ensureState(e, now);
      if (atStart && !fresh) catchUp(e, state, now);
      if (old) log.info({ job: job.id }, `cron job ${job.id} changed`);
      else if (!atStart) log.info({ job: job.id }, `cron job ${job.id} added`);
      arm(e);
    };
    for (const job of desired) upsert(job);
    for (const bad of invalid) {
      want.add(bad.id);
      const placeholder = {
        id: bad.id,
        message: "",
        session: "isolated",
        deliver: "none",
        enabled: false,
        light_context: true,
        catch_up: false,
      } as CronJobDef;
      upsert(placeholder, bad.error);
    }
    for (const [id, e] of entries) {
      if (e.source !== source || want.has(id)) continue;
      disarm(e);
      entries.delete(id);
      log.info({ job: id }, `cron job ${id} removed`);
    }
  }

  function reloadRuntime(atStart = false): void {
    const { jobs, invalid } = store.runtimeJobs();
    reconcile("runtime", jobs, invalid, atStart);
  }

  function poll(): void {
    pollTimer = undefined;
    if (!started) return;
    try {
      const v = store.dataVersion();
      if (v !== dataVersion) {
        dataVersion = v;
        reloadRuntime();
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, "cron: could not check the db for job changes");
    }
    pollTimer = pollClock.setTimeout(poll, pollMs);
    pollTimer.unref?.();
  }

  function mustGet(id: string): CronEntry {
    const e = entries.get(id);
    if (!e) throw new CronError("CRON_NOT_FOUND", `no cron job "${id}"`);
    return e;
  }

  const service: CronService = {
    name: "cron",
    async start() {
      started = true;
      const n = store.markInterrupted(clock.now());
      if (n > 0) log.warn({ runs: n }, `cron: ${n} run(s) were interrupted by the last shutdown`);
      mains.start();
      reconcile("config", ctx.config().cron.jobs, [], true);
      reloadRuntime(true);
      dataVersion = store.dataVersion();
      offConfig = ctx.onConfig((next, _prev, changed) => {
        if (!changed.includes("cron") && !changed.includes("timezone")) return;
        reconcile("config", next.cron.jobs, [], false);
        // A removed config job may uncover a runtime job of the same id; a new zone moves every job.
        reloadRuntime();
        for (const e of entries.values()) arm(e);
      });
      poll();
      log.info({ jobs: entries.size, enabled: enabled() }, "cron scheduler started");
    },
    async stop() {
      started = false;
      offConfig?.();
      mains.stop();
      if (pollTimer) pollClock.clearTimeout(pollTimer);
      for (const e of entries.values()) disarm(e);
      await Promise.allSettled([...entries.values()].map((e) => e.running));
    },
    health(): ServiceHealth {
      if (!enabled()) return { state: "disabled", detail: "cron.enabled is false" };
      const failing = [...entries.values()].filter((e) => (stateOf(e)?.failures ?? 0) > 0 || e.problem);
      const next = service.nextRuns(1)[0];
      return {
        state: failing.length ? "degraded" : "ok",
        ...(failing.length ? { detail: `failing: ${failing.map((e) => e.job.id).join(", ")}` } : {}),
        jobs: entries.size,
        nextRunAt: next?.at ?? null,
      };
    },
    list: () =>
      [...entries.values()].map((e) => jobView(stateOf, e)).sort((a, b) => a.id.localeCompare(b.id)),
    get: (id) => {
      const e = entries.get(id);
      return e ? jobView(stateOf, e) : undefined;
    },
    add(input) {
      const job = parseJobInput(input);
      if (entries.has(job.id) || store.runtimeJob(job.id))
        throw new CronError("CRON_EXISTS", `a cron job "${job.id}" already exists`);
      const schedule = jobSchedule(job, tz());
      if (schedule.kind === "at" && schedule.at <= clock.now())
        throw new CronError("CRON_INVALID", `invalid cron job: at ${job.at} is in the past`);
      store.putRuntimeJob(job, clock.now());
      reloadRuntime();
      return jobView(stateOf, mustGet(job.id));
    },
    remove(id) {
      const e = entries.get(id);
      if (e?.source === "config")
        throw new CronError("CRON_CONFIG_JOB", `cron job "${id}" is defined in config.yaml; remove it there`);
      if (!store.deleteRuntimeJob(id) && !e) throw new CronError("CRON_NOT_FOUND", `no cron job "${id}"`);
      reloadRuntime();
    },
    setEnabled(id, on) {
      const e = mustGet(id);
      if (e.source === "config")
        throw new CronError(
          "CRON_CONFIG_JOB",
          `cron job "${id}" is defined in config.yaml; set enabled: ${on} there`,
        );
      const stored = store.runtimeJob(id);
      if (!stored) throw new CronError("CRON_NOT_FOUND", `no cron job "${id}"`);
      if (stored.enabled !== on) {
        store.putRuntimeJob({ ...stored, enabled: on }, clock.now());
        reloadRuntime();
        log.info({ job: id }, `cron job ${id} ${on ? "resumed" : "paused"}`);
      }
      return jobView(stateOf, mustGet(id));
    },
    runNow: (id) => trigger(mustGet(id), "manual", null),
    run: (id) => service.runNow(id),
    runs: (jobId, limit) => store.runs(jobId, limit),
    nextRuns(limit = 10) {
      return [...entries.values()]
        .filter((e) => e.dueAt !== undefined)
        .map((e) => ({ jobId: e.job.id, at: e.dueAt! }))
        .sort((a, b) => a.at - b.at)
        .slice(0, limit);
    },
    refresh: () => {
      dataVersion = store.dataVersion();
      reloadRuntime();
    },
  };
  return service;
}
