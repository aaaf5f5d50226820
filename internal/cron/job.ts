/**
 * Cron job definitions, validation at creation, backoff and the next planned run (pure functions,
 * shared by the service and the CLI).
 */
import type { z } from "zod";
import { cronJobSchema } from "../config/schema.js";
import { formatProblem, issuesToProblems } from "../config/errors.js";
import { nextRunAfter, parseSchedule, type Schedule } from "../config/schedule.js";

/** A validated job, exactly as the config schema parses `cron.jobs[]` (`every` in ms). */
/** Persisted scheduling state of one job. */
export interface CronState {
  jobId: string;
  scheduleKey: string;
  anchorAt: number;
  lastDueAt: number | null;
  lastRunAt: number | null;
  lastEndAt: number | null;
  lastStatus: string | null;
  lastError: string | null;
  failures: number;
  completedAt: number | null;
}

export type CronJobDef = z.output<typeof cronJobSchema>;

/** Cron errors: bad input, unknown job, id clash, or an operation a config job does not allow. */
export class CronError extends Error {
  constructor(
    readonly code: "CRON_INVALID" | "CRON_NOT_FOUND" | "CRON_EXISTS" | "CRON_CONFIG_JOB" | "CRON_DISABLED",
    message: string,
  ) {
    super(message);
    this.name = "CronError";
  }
}

/** Validates a job given at runtime (tool, gateway, CLI). Throws CronError naming every bad field. */
export function parseJobInput(input: unknown): CronJobDef {
  const r = cronJobSchema.safeParse(input);
  if (!r.success)
    throw new CronError(
      "CRON_INVALID",
      `invalid cron job: ${issuesToProblems(r.error.issues, input).map(formatProblem).join("; ")}`,
    );
  return r.data;
}

/** Back-off after consecutive failures: 1 min, 5 min, 15 min, then 60 min (cap). */
export const BACKOFF_MS = [60_000, 300_000, 900_000, 3_600_000] as const;

export function backoffMs(failures: number): number {
  if (failures <= 0) return 0;
  return BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1] ?? 3_600_000;
}

/** A one-shot `at` job is retried (with backoff) this many times in all before it is given up. */
export const AT_MAX_ATTEMPTS = 3;

/** The job's schedule with the owner's time zone applied when it names none. */
export function jobSchedule(job: CronJobDef, ownerTimezone: string): Schedule {
  return parseSchedule(job, ownerTimezone);
}

/**
 * When the job should run next, after `now`: the schedule's next instant, pushed back by the failure
 * backoff; undefined when disabled, completed (one-shot done) or nothing is left to run.
 */
export function plannedNext(
  job: CronJobDef,
  schedule: Schedule,
  state: CronState | undefined,
  now: number,
): number | undefined {
  if (!job.enabled || state?.completedAt != null) return undefined;
  const anchor = state?.anchorAt ?? now;
  let next = nextRunAfter(schedule, now, anchor);
  if (state && state.failures > 0 && state.lastEndAt != null) {
    const retry = state.lastEndAt + backoffMs(state.failures);
    if (schedule.kind === "at") next = state.failures < AT_MAX_ATTEMPTS ? Math.max(retry, now) : undefined;
    else next = next === undefined ? retry : Math.max(next, retry);
  }
  return next;
}

/** The session a job's runs use: `cron:<id>` (isolated) or the owner's main session. */
export type SessionChoice = CronJobDef["session"];
