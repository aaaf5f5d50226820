/**
 * The cron scheduler. Jobs come from `cron.jobs` (reconciled on every config reload) and from runtime
 * creation (tool, gateway, CLI; persisted in `cron_jobs`). Every wait is a timer on the Clock, so a
 * FakeClock drives everything in tests; croner only computes instants.
 *
 * Invariants:
 * - at most one run per job at a time: a run that falls due while the previous still runs is recorded
 *   as `skipped` and logged, never queued behind it;
 * - every run is a row in `cron_runs` (start, end, status, error, tokens, output preview); a run left
 *   `running` by a crash is marked interrupted at the next start and resumed once (cron-missed.ts);
 * - every scheduled instant ends in exactly one recorded outcome (on time, late, skipped, failed); a
 *   run missed while down or across a clock jump follows the job's `missed` policy (cron-missed.ts);
 * - a failing job backs off (1, 5, 15, 60 min) and keeps its last error until a run succeeds;
 * - a one-shot `at` job is completed after it ran (or after AT_MAX_ATTEMPTS failures) and never again.
 *
 * This file is the lifecycle (start, stop, health, the poll for CLI edits) and the wiring of the
 * parts, each of one purpose: cron-timers.ts (a timer per job), cron-triggers.ts (starting and
 * recording runs), cron-reconcile.ts (entries from config and store), cron-admin.ts (list, add,
 * remove, pause, run now). They share one CronScope (cron-scope.ts).
 */
import type { CoreContext, ServiceHealth } from "../runtime/context.js";
import { systemClock, type TimerHandle } from "../core/clock.js";
import { CronStore } from "./cron-store.js";
import { CronOrigins } from "./cron-origins.js";
import { preferredTarget } from "../config/channel-owner.js";
import { MainSessionTracker, kvMainSessionStore } from "./main-session.js";
import type { CronEntry, CronService, CronServiceDeps } from "./cron-types.js";
import type { CronScope } from "./cron-scope.js";
import { createCronTimers } from "./cron-timers.js";
import { createCronTriggers } from "./cron-triggers.js";
import { createCronReconciler } from "./cron-reconcile.js";
import { createCronAdmin } from "./cron-admin.js";
import { createCronMissed } from "./cron-missed.js";

export type { CronJobView, CronService, CronServiceDeps } from "./cron-types.js";

/** Creates the cron scheduler service (not started). */
export function createCronService(ctx: CoreContext, deps: CronServiceDeps): CronService {
  const clock = deps.clock ?? ctx.clock;
  const pollClock = deps.pollClock ?? systemClock;
  const pollMs = deps.pollIntervalMs ?? 3000;
  const store = new CronStore(ctx.db);
  const mains = new MainSessionTracker(
    ctx.bus,
    deps.outbox,
    kvMainSessionStore(ctx.db, () => clock.now()),
  );
  let started = false;
  let pollTimer: TimerHandle | undefined;
  let dataVersion = 0;
  let offConfig: (() => void) | undefined;

  const scope: CronScope = {
    ctx,
    clock,
    log: ctx.logger.child({ service: "cron" }),
    store,
    origins: new CronOrigins(ctx.db),
    places: () => ({ preferred: preferredTarget(ctx.config()), last: deps.outbox.lastTarget() }),
    entries: new Map<string, CronEntry>(),
    isStarted: () => started,
    tz: () => ctx.config().timezone,
    enabled: () => ctx.config().cron.enabled,
    stateOf: (e) => store.state(e.job.id),
  };
  const { log, entries, stateOf, enabled } = scope;
  const timers = createCronTimers(scope, (e, dueAt) => missed.due(e, dueAt));
  const runs = createCronTriggers(scope, deps, mains, (e) => timers.arm(e));
  const missed = createCronMissed(scope, runs, deps.outbox);
  const jobs = createCronReconciler(scope, timers, runs, missed);

  function poll(): void {
    pollTimer = undefined;
    if (!started) return;
    try {
      const v = store.dataVersion();
      if (v !== dataVersion) {
        dataVersion = v;
        jobs.reloadRuntime();
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, "cron: could not check the db for job changes");
    }
    pollTimer = pollClock.setTimeout(poll, pollMs);
    pollTimer.unref?.();
  }

  const service: CronService = {
    ...createCronAdmin(scope, jobs, runs),
    name: "cron",
    async start() {
      started = true;
      const cut = store.markInterrupted(clock.now());
      if (cut.length > 0)
        log.warn({ runs: cut.length }, `cron: ${cut.length} run(s) were interrupted by the last shutdown`);
      missed.setInterrupted(cut);
      mains.start();
      jobs.reconcile("config", ctx.config().cron.jobs, [], true);
      jobs.reloadRuntime(true);
      missed.setInterrupted([]);
      dataVersion = store.dataVersion();
      offConfig = ctx.onConfig((next, _prev, changed) => {
        if (!changed.includes("cron") && !changed.includes("timezone")) return;
        jobs.reconcile("config", next.cron.jobs, [], false);
        // A removed config job may uncover a runtime job of the same id; a new zone moves every job.
        jobs.reloadRuntime();
        for (const e of entries.values()) timers.arm(e);
      });
      poll();
      log.info({ jobs: entries.size, enabled: enabled() }, "cron scheduler started");
    },
    async stop() {
      started = false;
      offConfig?.();
      mains.stop();
      if (pollTimer) pollClock.clearTimeout(pollTimer);
      for (const e of entries.values()) timers.disarm(e);
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
    run: (id) => service.runNow(id),
    refresh: () => {
      dataVersion = store.dataVersion();
      jobs.reloadRuntime();
    },
  };
  return service;
}
