/**
 * The cron service's timers: one Clock timer per job entry, armed for the job's next planned run.
 * Timers are capped at MAX_TIMER_MS and re-armed when they wake early, so a clock jump or a long
 * sleep never fires a job late by more than one cap, and never early.
 */
import { plannedNext } from "./job.js";
import { MAX_TIMER_MS, type CronEntry } from "./cron-types.js";
import type { CronScope } from "./cron-scope.js";

/** Arms and disarms the timers of job entries. */
export interface CronTimers {
  /** (Re)arms the entry for its next planned run; no timer when stopped, disabled or never due. */
  arm(e: CronEntry): void;
  /** Clears the entry's timer and due time. */
  disarm(e: CronEntry): void;
}

/** Creates the timers; `fire` is called when an entry's run falls due (then the entry is re-armed). */
export function createCronTimers(s: CronScope, fire: (e: CronEntry, dueAt: number) => void): CronTimers {
  const { clock } = s;

  function disarm(e: CronEntry): void {
    if (e.timer) clock.clearTimeout(e.timer);
    e.timer = undefined;
    e.dueAt = undefined;
  }

  function arm(e: CronEntry): void {
    disarm(e);
    if (!s.isStarted() || !s.enabled() || !e.schedule || s.entries.get(e.job.id) !== e) return;
    const next = plannedNext(e.job, e.schedule, s.stateOf(e), clock.now());
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
    if (s.entries.get(e.job.id) !== e || e.dueAt === undefined) return;
    if (clock.now() < e.dueAt) return setTimer(e);
    fire(e, e.dueAt);
    arm(e);
  }

  return { arm, disarm };
}
