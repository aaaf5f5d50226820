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
  // Never an instant at or before the last one handled: a clock stepped back (NTP, a resumed laptop)
  // must not fire the same run again.
  const after = state?.lastDueAt != null ? Math.max(now, state.lastDueAt) : now;
  let next = nextRunAfter(schedule, after, anchor);
  if (state && state.failures > 0 && state.lastEndAt != null) {
    const retry = state.lastEndAt + backoffMs(state.failures);
    if (schedule.kind === "at") next = state.failures < AT_MAX_ATTEMPTS ? Math.max(retry, now) : undefined;
    else next = next === undefined ? retry : Math.max(next, retry);
  }
  return next;
}

/** The session a job's runs use: `cron:<id>` (isolated) or the owner's main session. */
export type SessionChoice = CronJobDef["session"];

/** What happens to a run missed while the daemon was down or the clock jumped forward. */
export type MissedPolicy = NonNullable<CronJobDef["missed"]>;

/** The job's missed-run policy: explicit, else `run_once_late` for `at` or `catch_up`, else `skip`. */
export function missedPolicy(job: Pick<CronJobDef, "missed" | "at" | "catch_up">): MissedPolicy {
  return job.missed ?? (job.at !== undefined || job.catch_up ? "run_once_late" : "skip");
}

/**
 * A run that starts more than this after its instant is late (the missed-run policy applies). Below
 * it, a busy event loop or a timer waking a little late is still on time.
 */
export const LATE_AFTER_MS = 60_000;

/** The instants of a schedule that fell due from `first` to `now`, inclusive. */
export interface MissedSpan {
  first: number;
  latest: number;
  /** How many instants; counting stops at MISSED_COUNT_CAP (then it reads "at least"). */
  count: number;
}

export const MISSED_COUNT_CAP = 10_000;

/** Counts the instants from `first` (a due instant) up to `now`. */
export function missedSpan(schedule: Schedule, first: number, now: number, anchor: number): MissedSpan {
  let latest = first;
  let count = 1;
  for (;;) {
    if (count >= MISSED_COUNT_CAP) break;
    const n = nextRunAfter(schedule, latest, anchor);
    if (n === undefined || n > now) break;
    latest = n;
    count++;
  }
  return { first, latest, count };
}

/** "3 h 12 min", "45 s", "2 d 4 h": how late a run is, for messages. */
export function formatLateness(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** An instant in the owner's time zone, for messages: `2026-01-02 09:00 (Europe/Berlin)`. */
export function formatInstant(at: number, timezone: string): string {
  const f = new Intl.DateTimeFormat("sv-SE", {
    timeZone: timezone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hour12: false,
  });
  return `${f.format(new Date(at))} (${timezone})`;
}

/** How a late run came about; its delivered message says so. */
export interface LateRun {
  lateMs: number;
  /** Scheduled instants this one run stands for (all missed ones). */
  covers: number;
  /** The last of them: the job's `lastDueAt` afterwards, so none runs again. */
  latestDue: number;
  cause: "down" | "clock" | "resume";
  /** The interrupted run this one resumes. */
  resumeOf?: number;
}
