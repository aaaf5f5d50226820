/**
 * The cron service's job administration, as the tool, the gateway and the CLI call it: list, add,
 * remove, pause/resume and run now. Runtime jobs are written to the store first and then reconciled,
 * so the store stays the one record of them; config jobs are refused (they live in config.yaml).
 */
import { relativeAt } from "../config/schedule.js";
import { CronError, jobSchedule, parseJobInput } from "./job.js";
import { jobView, type CronEntry, type CronService } from "./cron-types.js";
import type { CronScope } from "./cron-scope.js";
import type { CronReconciler } from "./cron-reconcile.js";
import type { CronTriggers } from "./cron-triggers.js";

/** The admin half of {@link CronService} (the lifecycle half is in cron-service.ts). */
export type CronAdmin = Omit<CronService, "name" | "start" | "stop" | "health" | "refresh">;

/** Creates the admin calls over the shared entries. */
export function createCronAdmin(s: CronScope, jobs: CronReconciler, runs: CronTriggers): CronAdmin {
  const { clock, log, store, entries, stateOf, origins } = s;
  /** A job as lists show it, with where it was asked and an undelivered reply, if any. */
  const view = (e: CronEntry) => {
    const held = origins.undelivered().find((u) => u.jobId === e.job.id);
    return jobView(stateOf, e, {
      origin: e.source === "runtime" ? origins.get(e.job.id) : undefined,
      undeliveredRun: held?.runId,
    });
  };

  function mustGet(id: string): CronEntry {
    const e = entries.get(id);
    if (!e) throw new CronError("CRON_NOT_FOUND", `no cron job "${id}"`);
    return e;
  }

  const admin: CronAdmin = {
    list: () => [...entries.values()].map(view).sort((a, b) => a.id.localeCompare(b.id)),
    get: (id) => {
      const e = entries.get(id);
      return e ? view(e) : undefined;
    },
    add(input, origin) {
      // `at: "in 2 minutes"` (the cron tool, the gateway): fixed to an instant now, never re-read later.
      const given = input && typeof input === "object" ? (input as Record<string, unknown>) : undefined;
      const rel = typeof given?.at === "string" ? relativeAt(given.at, clock.now()) : undefined;
      const job = parseJobInput(rel ? { ...given, at: rel } : input);
      if (entries.has(job.id) || store.runtimeJob(job.id))
        throw new CronError("CRON_EXISTS", `a cron job "${job.id}" already exists`);
      const schedule = jobSchedule(job, s.tz());
      if (schedule.kind === "at" && schedule.at <= clock.now())
        throw new CronError("CRON_INVALID", `invalid cron job: at ${job.at} is in the past`);
      // The job and where it was asked in one commit: a job is never seen without its origin.
      s.ctx.db.transaction(() => {
        store.putRuntimeJob(job, clock.now());
        origins.put(job.id, origin, clock.now());
      })();
      jobs.reloadRuntime();
      return view(mustGet(job.id));
    },
    remove(id) {
      const e = entries.get(id);
      if (e?.source === "config")
        throw new CronError("CRON_CONFIG_JOB", `cron job "${id}" is defined in config.yaml; remove it there`);
      if (!store.deleteRuntimeJob(id) && !e) throw new CronError("CRON_NOT_FOUND", `no cron job "${id}"`);
      origins.delete(id);
      origins.clearUndelivered(id);
      jobs.reloadRuntime();
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
        jobs.reloadRuntime();
        log.info({ job: id }, `cron job ${id} ${on ? "resumed" : "paused"}`);
      }
      return view(mustGet(id));
    },
    runNow: (id) => {
      // A job added by `familiar cron add` a moment ago may not be polled in yet: look in the store
      // before saying it does not exist, so `cron add` then `cron run` just works.
      if (!entries.has(id)) jobs.reloadRuntime();
      return runs.trigger(mustGet(id), "manual", null);
    },
    run: (id) => admin.runNow(id),
    runs: (jobId, limit) => store.runs(jobId, limit),
    nextRuns(limit = 10) {
      return [...entries.values()]
        .filter((e) => e.dueAt !== undefined)
        .map((e) => ({ jobId: e.job.id, at: e.dueAt! }))
        .sort((a, b) => a.at - b.at)
        .slice(0, limit);
    },
  };
  return admin;
}
