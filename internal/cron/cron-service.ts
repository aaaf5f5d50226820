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
 */
import type { CoreContext, Service, ServiceHealth } from "../core/context.js";
import type { AgentHost } from "../core/host.js";
import { systemClock, type Clock, type TimerHandle } from "../core/clock.js";
import type { ChannelRegistry } from "../channels/registry.js";
import { sessionKeys } from "../session/keys.js";
import { CronStore, type CronRunRecord, type CronState } from "./cron-store.js";
import { CronError, jobSchedule, parseJobInput, plannedNext, type CronJobDef } from "./job.js";
import { describeSchedule, nextRunAfter, scheduleKey, type Schedule } from "./schedule.js";
import { MainSessionTracker, kvMainSessionStore } from "./main-session.js";
import { executeRun, type RunnerDeps } from "./cron-runner.js";

export interface CronServiceDeps {
  host: AgentHost;
  channels: ChannelRegistry;
  /** Schedules runs; defaults to `ctx.clock`. */
  clock?: Clock;
  /** Drives the cheap check for jobs the CLI changed in the db; the real clock by default. */
  pollClock?: Clock;
  pollIntervalMs?: number;
}

/** What lists show for a job. */
export interface CronJobView {
  id: string;
  source: "config" | "runtime";
  schedule: string;
  message: string;
  agent: string | null;
  session: CronJobDef["session"];
  deliver: string;
  enabled: boolean;
  catchUp: boolean;
  lightContext: boolean;
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastStatus: string | null;
  lastError: string | null;
  failures: number;
  running: boolean;
  completed: boolean;
  /** Why the job cannot be scheduled (e.g. a stored job that no longer validates). */
  problem: string | null;
}

export interface CronService extends Service {
  list(): CronJobView[];
  get(id: string): CronJobView | undefined;
  /** Validates and persists a runtime job; throws CronError. */
  add(input: unknown): CronJobView;
  /** Removes a runtime job; throws CRON_CONFIG_JOB for a config job, CRON_NOT_FOUND when unknown. */
  remove(id: string): void;
  /**
   * Pauses (`false`) or resumes (`true`) a runtime job, persisted; throws CRON_CONFIG_JOB for a config
   * job (its `enabled` lives in config.yaml), CRON_NOT_FOUND when unknown.
   */
  setEnabled(id: string, enabled: boolean): CronJobView;
  /** Runs a job now (even when disabled) and resolves when the run ended (or was skipped). */
  runNow(id: string): Promise<CronRunRecord>;
  /** Alias of runNow for the gateway's `cron.run`. */
  run(id: string): Promise<CronRunRecord>;
  runs(jobId: string, limit?: number): CronRunRecord[];
  nextRuns(limit?: number): { jobId: string; at: number }[];
  /** Re-reads runtime jobs from the db now (the poll does this when another process wrote). */
  refresh(): void;
}

interface Entry {
  job: CronJobDef;
  source: "config" | "runtime";
  key: string;
  schedule: Schedule | undefined;
  problem: string | undefined;
  timer: TimerHandle | undefined;
  dueAt: number | undefined;
  running: Promise<CronRunRecord> | undefined;
}

/** Longest single timer: long waits are re-checked so a suspended laptop or a clock step is noticed. */
const MAX_TIMER_MS = 60 * 60_000;

export function createCronService(ctx: CoreContext, deps: CronServiceDeps): CronService {
  const clock = deps.clock ?? ctx.clock;
  const pollClock = deps.pollClock ?? systemClock;
  const pollMs = deps.pollIntervalMs ?? 3000;
  const log = ctx.logger.child({ service: "cron" });
  const store = new CronStore(ctx.db);
  const mains = new MainSessionTracker(
    ctx.bus,
    deps.channels,
    kvMainSessionStore(ctx.db, () => clock.now()),
  );
  const entries = new Map<string, Entry>();
  const runner: RunnerDeps = {
    host: deps.host,
    channels: deps.channels,
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

  function stateOf(e: Entry): CronState | undefined {
    return store.state(e.job.id);
  }

  /** Creates the state row, or resets it when the schedule changed (new anchor, no stale catch-up). */
  function ensureState(e: Entry, now: number): { state: CronState; fresh: boolean } {
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

  function disarm(e: Entry): void {
    if (e.timer) clock.clearTimeout(e.timer);
    e.timer = undefined;
    e.dueAt = undefined;
  }

  function arm(e: Entry): void {
    disarm(e);
    if (!started || !enabled() || !e.schedule || entries.get(e.job.id) !== e) return;
    const next = plannedNext(e.job, e.schedule, stateOf(e), clock.now());
    if (next === undefined) return;
    e.dueAt = next;
    setTimer(e);
  }

  function setTimer(e: Entry): void {
    const delay = Math.max(0, Math.min((e.dueAt ?? 0) - clock.now(), MAX_TIMER_MS));
    e.timer = clock.setTimeout(() => onTimer(e), delay);
    e.timer.unref?.();
  }

  function onTimer(e: Entry): void {
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

  function trigger(e: Entry, kind: CronRunRecord["trigger"], dueAt: number | null): Promise<CronRunRecord> {
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
    e.key = entryKey(next);
  }

  function entryKey(job: CronJobDef): string {
    return `${tz()}\u0000${JSON.stringify(job)}`;
  }

  function makeEntry(job: CronJobDef, source: Entry["source"], problem?: string): Entry {
    let schedule: Schedule | undefined;
    let why = problem;
    if (!why) {
      try {
        schedule = jobSchedule(job, tz());
      } catch (err) {
        why = (err as Error).message;
      }
    }
    return {
      job,
      source,
      key: entryKey(job),
      schedule,
      problem: why,
      timer: undefined,
      dueAt: undefined,
      running: undefined,
    };
  }

  /** Startup: runs missed while down (catch_up), or marks a missed one-shot as missed. */
  function catchUp(e: Entry, state: CronState, now: number): void {
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
    source: Entry["source"],
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
      if (old && old.source === source && old.key === entryKey(job) && !problem) return;
      const e = makeEntry(job, source, problem);
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

  function view(e: Entry): CronJobView {
    const st = stateOf(e);
    const j = e.job;
    return {
      id: j.id,
      source: e.source,
      schedule: e.schedule ? describeSchedule(e.schedule) : "invalid",
      message: j.message,
      agent: j.agent ?? null,
      session: j.session,
      deliver: j.deliver,
      enabled: j.enabled,
      catchUp: j.catch_up,
      lightContext: j.light_context,
      nextRunAt: e.dueAt ?? null,
      lastRunAt: st?.lastRunAt ?? null,
      lastStatus: st?.lastStatus ?? null,
      lastError: st?.lastError ?? null,
      failures: st?.failures ?? 0,
      running: e.running !== undefined,
      completed: st?.completedAt != null,
      problem: e.problem ?? null,
    };
  }

  function mustGet(id: string): Entry {
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
    list: () => [...entries.values()].map(view).sort((a, b) => a.id.localeCompare(b.id)),
    get: (id) => {
      const e = entries.get(id);
      return e ? view(e) : undefined;
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
      return view(mustGet(job.id));
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
      return view(mustGet(id));
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
