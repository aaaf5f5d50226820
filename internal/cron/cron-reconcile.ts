/**
 * Bringing the cron entries in line with their sources: `cron.jobs` of the config (at start and on
 * every reload) and the runtime jobs of `cron_jobs` (at start, after an admin call, and when another
 * process such as the CLI committed). A config job shadows a runtime job of the same id; a stored job
 * that no longer validates stays listed with its problem instead of vanishing.
 */
import type { CronJobDef } from "./job.js";
import { entryKey, makeEntry, type CronEntry } from "./cron-types.js";
import type { CronScope } from "./cron-scope.js";
import type { CronTimers } from "./cron-timers.js";
import type { CronTriggers } from "./cron-triggers.js";
import type { CronMissed } from "./cron-missed.js";

/** Reconciles the entries of each source. */
export interface CronReconciler {
  /** Brings the entries of one source in line with `desired`: adds, changes and removes. */
  reconcile(
    source: CronEntry["source"],
    desired: CronJobDef[],
    invalid: { id: string; error: string }[],
    atStart: boolean,
  ): void;
  /** Re-reads the runtime jobs from the store and reconciles them. */
  reloadRuntime(atStart?: boolean): void;
}

/** Creates the reconciler. */
export function createCronReconciler(
  s: CronScope,
  timers: CronTimers,
  runs: CronTriggers,
  missed: CronMissed,
): CronReconciler {
  const { clock, log, store, entries } = s;

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
      if (old && old.source === source && old.key === entryKey(job, s.tz()) && !problem) return;
      const e = makeEntry(s.tz(), job, source, problem);
      e.running = old?.running;
      if (old) timers.disarm(old);
      entries.set(job.id, e);
      if (e.problem) {
        log.error({ job: job.id }, `cron job ${job.id} cannot be scheduled: ${e.problem}`);
        return;
      }
      const { state, fresh } = runs.ensureState(e, now);
      if (atStart && !fresh) missed.catchUp(e, state, now);
      // A one-shot first seen after its time (written into config.yaml while the daemon was down, or
      // edited to a past time) is a missed run too, never a silent nothing.
      else if (fresh) missed.firstSight(e, now);
      if (old) log.info({ job: job.id }, `cron job ${job.id} changed`);
      else if (!atStart) log.info({ job: job.id }, `cron job ${job.id} added`);
      timers.arm(e);
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
      timers.disarm(e);
      entries.delete(id);
      log.info({ job: id }, `cron job ${id} removed`);
    }
  }

  function reloadRuntime(atStart = false): void {
    const { jobs, invalid } = store.runtimeJobs();
    reconcile("runtime", jobs, invalid, atStart);
  }

  return { reconcile, reloadRuntime };
}
