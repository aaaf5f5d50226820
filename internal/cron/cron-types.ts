/**
 * The cron service's contract (what the tool, the gateway and the CLI use) and its entries: a job
 * with its parsed schedule, timer and running run, built and shown by the helpers below.
 */
import type { Service } from "../core/service.js";
import type { AgentHost } from "../core/host.js";
import type { Clock, TimerHandle } from "../core/clock.js";
import type { Outbox } from "../core/outbox.js";
import type { SessionPost } from "../core/session-post.js";
import type { CronOrigin } from "./cron-origins.js";
import { describeSchedule, type Schedule } from "../config/schedule.js";
import type { CronRunRecord, CronState } from "./cron-store.js";
import { jobSchedule, type CronJobDef } from "./job.js";

export interface CronServiceDeps {
  host: AgentHost;
  outbox: Outbox;
  /** Schedules runs; defaults to `ctx.clock`. */
  clock?: Clock;
  /** Drives the cheap check for jobs the CLI changed in the db; the real clock by default. */
  pollClock?: Clock;
  pollIntervalMs?: number;
  /**
   * The gateway's session post: a reply goes into the web chat or `familiar chat` session it was
   * asked in. Read at each delivery (the gateway is built after cron); absent without a gateway.
   */
  sessions?: () => SessionPost | undefined;
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
  /** Where it was asked (runtime jobs from a chat or the CLI); null otherwise. */
  origin: CronOrigin | null;
  /** Its last reply reached nobody (no chat, no owner.preferred_channel): the run that holds it. */
  undeliveredRun: number | null;
}

export interface CronService extends Service {
  list(): CronJobView[];
  get(id: string): CronJobView | undefined;
  /**
   * Validates and persists a runtime job with where it was asked (`origin`: the calling chat, set by
   * the cron tool from its turn, never from a request); throws CronError.
   */
  add(input: unknown, origin?: CronOrigin): CronJobView;
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

/** A scheduled job inside the service. */
export interface CronEntry {
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
export const MAX_TIMER_MS = 60 * 60_000;

/** Changes when the job or the timezone changes: a changed entry is re-armed. */
export function entryKey(job: CronJobDef, tz: string): string {
  return `${tz}\u0000${JSON.stringify(job)}`;
}

/** A new, unarmed entry; `problem` (or a schedule that does not parse) keeps it from running. */
export function makeEntry(
  tz: string,
  job: CronJobDef,
  source: CronEntry["source"],
  problem?: string,
): CronEntry {
  let schedule: Schedule | undefined;
  let why = problem;
  if (!why) {
    try {
      schedule = jobSchedule(job, tz);
    } catch (err) {
      why = (err as Error).message;
    }
  }
  return {
    job,
    source,
    key: entryKey(job, tz),
    schedule,
    problem: why,
    timer: undefined,
    dueAt: undefined,
    running: undefined,
  };
}

/** What lists show for an entry. */
export function jobView(
  stateOf: (e: CronEntry) => CronState | undefined,
  e: CronEntry,
  reply?: { origin: CronOrigin | undefined; undeliveredRun: number | undefined },
): CronJobView {
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
    origin: reply?.origin ?? null,
    undeliveredRun: reply?.undeliveredRun ?? null,
  };
}
