/**
 * Delivering one run's reply along its route (cron-reply-route.ts): to a channel target through the
 * Outbox, or into the chat session it was asked in through the SessionPost port, with the fallback
 * when nobody is there. A reply that reaches nobody is never dropped silently: it stays in the run
 * (`familiar cron runs <id>`), and the owner is warned once per streak (WARN in the log, a line in
 * `familiar status`, an item in the console's needs-attention list) until a run is delivered again.
 */
import type { Logger } from "../log/logger.js";
import type { Outbox } from "../core/outbox.js";
import type { SessionPost } from "../core/session-post.js";
import type { CronOrigins } from "./cron-origins.js";
import type { ReplyRoute } from "./cron-reply-route.js";

/** What delivering needs from the runner. */
export interface DeliverDeps {
  outbox: Outbox;
  origins: CronOrigins;
  log: Logger;
  /** The gateway's session post, when the gateway runs. */
  sessions?: (() => SessionPost | undefined) | undefined;
}

/** What became of a reply. */
export interface DeliveryOutcome {
  delivered: boolean;
  /** Where it went (a channel target, or `session:<key>`). */
  to?: string;
  /** The delivery itself failed (the run is an error): the target that failed and why. */
  failed?: { target: string; error: string };
  /** It reached nobody: why (the owner is warned once). */
  nowhere?: string;
}

/** Where an undelivered reply can be read, for the run's note and the log. */
export function keptReplyHint(jobId: string): string {
  return `the reply is kept: familiar cron runs ${jobId} --json, or the console's Cron page`;
}

/** Delivers `text` (the run `runId` of `jobId`, which ran in `runSessionKey`) along `route`. */
export async function deliverReply(
  d: DeliverDeps,
  route: ReplyRoute,
  m: { jobId: string; runId: number; runSessionKey: string; text: string; now: () => number },
): Promise<DeliveryOutcome> {
  let out: DeliveryOutcome;
  if (route.kind === "none") return { delivered: false };
  if (route.kind === "target") out = await toTarget(d, route.target, m.text);
  else if (route.kind === "nowhere") out = { delivered: false, nowhere: route.why };
  else {
    const poster = d.sessions?.();
    const posted = poster
      ? await poster
          .post({
            sessionKey: route.sessionKey,
            text: m.text,
            jobId: m.jobId,
            runSessionKey: m.runSessionKey,
          })
          .catch((err: unknown) => {
            d.log.warn(
              { job: m.jobId, err: (err as Error).message },
              `cron job ${m.jobId}: could not post the reply to ${route.sessionKey}`,
            );
            return { kept: false, live: 0 };
          })
      : { kept: false, live: 0 };
    if (posted.live > 0) out = { delivered: true, to: `session:${route.sessionKey}` };
    else if (route.fallback) out = await toTarget(d, route.fallback, m.text);
    else
      out = {
        delivered: false,
        nowhere: posted.kept
          ? `no client has the chat it was asked in open (${route.sessionKey}; the reply is in its transcript)`
          : `the chat it was asked in is gone (${route.sessionKey})`,
      };
  }
  if (out.delivered) d.origins.clearUndelivered(m.jobId);
  if (out.nowhere !== undefined) {
    const first = d.origins.markUndelivered(m.jobId, m.runId, m.now());
    const line = `cron job ${m.jobId}: the reply was not delivered: ${out.nowhere}, and owner.preferred_channel is not set; ${keptReplyHint(m.jobId)}`;
    // Loud once per streak (the owner must learn where replies are kept), quiet after.
    if (first) d.log.warn({ job: m.jobId, run: m.runId }, line);
    else d.log.info({ job: m.jobId, run: m.runId }, line);
  }
  return out;
}

async function toTarget(d: DeliverDeps, target: string, text: string): Promise<DeliveryOutcome> {
  try {
    await d.outbox.deliver(target, text);
    return { delivered: true, to: target };
  } catch (err) {
    return { delivered: false, failed: { target, error: (err as Error).message } };
  }
}
