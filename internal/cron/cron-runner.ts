/**
 * One cron run: submit the job's message to the agent host, deliver the reply, record the outcome and
 * update the job's state (failures for backoff, last error, one-shot completion). Never throws.
 */
import type { AgentHost } from "../core/host.js";
import type { Clock } from "../core/clock.js";
import type { EventBus } from "../core/event-bus.js";
import type { Logger } from "../log/logger.js";
import type { Outbox } from "../core/outbox.js";
import type { SessionPost } from "../core/session-post.js";
import type { CronRunRecord, CronStore } from "./cron-store.js";
import type { CronOrigins } from "./cron-origins.js";
import { deliverReply, keptReplyHint } from "./cron-deliver.js";
import { fallbackTarget, noticeTarget, replyRoute, type FallbackPlaces } from "./cron-reply-route.js";
import {
  AT_MAX_ATTEMPTS,
  backoffMs,
  formatInstant,
  formatLateness,
  type CronJobDef,
  type LateRun,
} from "./job.js";

export interface RunnerDeps {
  host: AgentHost;
  outbox: Outbox;
  store: CronStore;
  clock: Clock;
  log: Logger;
  bus: EventBus;
  /** The owner's time zone, for the late note. */
  tz(): string;
  /** Called when a one-shot `at` job is done for good. */
  onOneShotDone(job: CronJobDef): void;
  /** Where each job was asked, and the replies that reached nobody. */
  origins: CronOrigins;
  /** The fallback places, read when a run ends (the config and the last chat change). */
  places(): FallbackPlaces;
  /** The gateway's session post (the web chat, `familiar chat`), when the gateway runs. */
  sessions?: (() => SessionPost | undefined) | undefined;
}

/**
 * How much of the reply a run keeps (`output_preview`). Large enough to hold a whole reply: a reply
 * that could not be delivered is read from here (`familiar cron runs`, the console's Cron page).
 */
const OUTPUT_CHARS = 20_000;

export { keptReplyHint } from "./cron-deliver.js";
/** Turn endings that mean the job did not do its work (they count toward backoff). */
const FAILED = new Set(["error", "aborted", "loop_breaker"]);

export async function executeRun(
  d: RunnerDeps,
  job: CronJobDef,
  runId: number,
  sessionKey: string,
  agentId: string | undefined,
  late?: LateRun & { dueAt: number },
): Promise<CronRunRecord> {
  let status: "ok" | "error" = "ok";
  let error: string | null = null;
  let tokens = 0;
  let text = "";
  let delivered = false;
  let failedTarget: string | undefined;
  const origin = d.origins.get(job.id);
  const route = replyRoute(job, origin, d.places());
  const target = route.kind === "target" ? route.target : undefined;
  try {
    const handle = d.host.submit({
      channel: "cron",
      sessionKey,
      ...(agentId ? { agentId } : {}),
      text: job.message,
      lightContext: job.light_context,
      // A cheap model for background work; the agent's model when the job names none.
      ...(job.model ? { model: job.model } : {}),
      originLabel: `scheduled job "${job.id}"`,
      // By identity: a label on the job (a tainted session wrote it) taints the run from its start.
      reads: { jobs: [job.id] },
      ...(target ? { replyTarget: target } : {}),
    });
    const result = await handle.result;
    tokens = result.treeUsage.total || result.usage.total;
    text = result.text;
    if (FAILED.has(result.finishReason) || result.error) {
      status = "error";
      error = result.error?.message ?? `the turn ended with ${result.finishReason}`;
    } else if (text.trim() !== "") {
      const out = await deliverReply(d, route, {
        jobId: job.id,
        runId,
        runSessionKey: sessionKey,
        text: late ? `${lateNote(late, d.tz())}\n\n${text}` : text,
        now: () => d.clock.now(),
      });
      delivered = out.delivered;
      if (out.failed) {
        status = "error";
        failedTarget = out.failed.target;
        error = `delivery to ${out.failed.target} failed: ${out.failed.error}; ${keptReplyHint(job.id)}`;
      }
    }
  } catch (err) {
    status = "error";
    error = (err as Error).message;
  }
  const end = d.clock.now();
  try {
    d.store.finishRun(runId, job.id, {
      endedAt: end,
      status,
      error,
      tokens,
      preview: text ? text.slice(0, OUTPUT_CHARS) : null,
      delivered,
    });
    const st = d.store.state(job.id);
    if (st) {
      const failures = status === "ok" ? 0 : st.failures + 1;
      const done =
        job.at !== undefined && (status === "ok" || failures >= AT_MAX_ATTEMPTS) ? end : st.completedAt;
      d.store.putState({
        ...st,
        lastEndAt: end,
        lastStatus: status,
        lastError: status === "ok" ? null : error,
        failures,
        completedAt: done,
      });
      if (done != null && job.at !== undefined) d.onOneShotDone(job);
      // A job that stops working must not fail silently: its target hears about it once per failure
      // streak (and when a one-shot gives up), unless the target itself is what fails.
      // A job that delivers nowhere, or whose target is what failed, reports to where the owner last
      // wrote from instead.
      const givenUp = job.at !== undefined && done != null && status === "error";
      const places = d.places();
      const tellTo = failedTarget ? fallbackTarget(places) : noticeTarget(job, origin, places);
      const tellOk = tellTo !== undefined && tellTo !== failedTarget;
      if (status === "error" && tellOk && (failures === 1 || givenUp))
        await d.outbox
          .deliver(tellTo, failureNotice(job, error ?? "unknown error", failures, givenUp))
          .catch((err: unknown) =>
            d.log.warn(
              { job: job.id, err: (err as Error).message },
              `cron job ${job.id}: could not report its failure to ${tellTo}`,
            ),
          );
      else if (status === "error" && (failures === 1 || givenUp))
        d.log.error({ job: job.id }, `cron job ${job.id} failed and there is no channel to tell the owner`);
      if (status === "error")
        d.log.warn(
          { job: job.id, err: error, failures },
          `cron job ${job.id} failed (${failures} in a row): ${error}; backing off ${backoffMs(failures) / 60_000} min`,
        );
      else d.log.info({ job: job.id, tokens, delivered }, `cron job ${job.id}: run finished`);
    }
  } catch (err) {
    d.log.error({ job: job.id, err: (err as Error).message }, "cron: could not record a run");
  }
  d.bus.emit("cron", { jobId: job.id, status, ...(error ? { detail: error } : {}) });
  return (
    d.store.run(runId) ?? {
      id: runId,
      jobId: job.id,
      trigger: "manual",
      dueAt: null,
      startedAt: end,
      endedAt: end,
      status,
      error,
      tokens,
      outputPreview: text.slice(0, OUTPUT_CHARS),
      delivered,
      sessionKey,
      outcome: status === "ok" ? (late ? "late" : "on_time") : "failed",
      lateMs: late?.lateMs ?? null,
      covers: late?.covers ?? 1,
      resumeOf: late?.resumeOf ?? null,
    }
  );
}

/** The first line of a late run's delivered message: how late, and why. */
export function lateNote(late: LateRun & { dueAt: number }, tz: string): string {
  const why =
    late.cause === "resume"
      ? "a restart interrupted its first run"
      : late.cause === "clock"
        ? "the clock jumped forward"
        : "the daemon was not running";
  const more = late.covers > 1 ? `; it stands for ${late.covers} missed runs` : "";
  return `(Late by ${formatLateness(late.lateMs)}: due ${formatInstant(late.dueAt, tz)}, ${why}${more}.)`;
}

/** The short message a job's target gets when the job starts failing or a one-shot gives up. */
export function failureNotice(
  job: Pick<CronJobDef, "id" | "at">,
  error: string,
  failures: number,
  givenUp: boolean,
): string {
  const why = (error.length > 300 ? `${error.slice(0, 300)}...` : error).replace(/(?<!\.\.)[.\s]+$/, "");
  if (givenUp) return `Scheduled job "${job.id}" failed ${failures} times and was given up: ${why}`;
  const retry =
    job.at !== undefined
      ? `It will be retried in ${backoffMs(failures) / 60_000} min.`
      : `Its next scheduled run tries again (not before ${backoffMs(failures) / 60_000} min).`;
  return `Scheduled job "${job.id}" failed: ${why}. ${retry} Details: familiar cron runs ${job.id}`;
}
