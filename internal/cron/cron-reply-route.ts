/**
 * Where a job's reply goes (pure). A job's `deliver` is a channel target, `last`, `none`, or `origin`:
 * the chat the job was asked in (stored with the job, cron-origins.ts).
 *
 * Invariants:
 * - `origin` in a chat with a channel target (Telegram, Discord) is that target, as before origins;
 * - `origin` in a chat without one (the web chat, `familiar chat`) is that session; when nobody is
 *   there, the fallback is used: `owner.preferred_channel`, else the channel target the owner last
 *   wrote from;
 * - `origin` with no chat (`familiar cron add`, a config job) and `last` with no last target go to
 *   the same fallback; with none, the route is `nowhere` and the runner warns the owner once;
 * - a route never names a target the job could not name itself: the fallback is the owner's own
 *   (config or their last chat), never a place a request supplied.
 */
import type { CronOrigin } from "./cron-origins.js";
import type { CronJobDef } from "./job.js";

/** The places a reply can fall back to, read when the run ends (hot reload, a new last chat). */
export interface FallbackPlaces {
  /** The resolved `owner.preferred_channel` target. */
  preferred: string | undefined;
  /** The channel target the owner last wrote from. */
  last: string | undefined;
}

/** The route of one reply. */
export type ReplyRoute =
  | { kind: "none" }
  | { kind: "target"; target: string }
  | { kind: "session"; sessionKey: string; fallback: string | undefined }
  | { kind: "nowhere"; why: string };

/** The fallback target: the preferred channel, else the last chat. */
export function fallbackTarget(p: FallbackPlaces): string | undefined {
  return p.preferred ?? p.last;
}

/** Where the reply of `job` (asked from `origin`) goes. */
export function replyRoute(
  job: Pick<CronJobDef, "deliver">,
  origin: CronOrigin | undefined,
  places: FallbackPlaces,
): ReplyRoute {
  const d = job.deliver;
  if (d === "none" || d === "") return { kind: "none" };
  const fallback = fallbackTarget(places);
  if (d === "origin") {
    if (origin?.kind === "chat" && origin.replyTarget) return { kind: "target", target: origin.replyTarget };
    if (origin?.kind === "chat") return { kind: "session", sessionKey: origin.sessionKey, fallback };
    if (fallback) return { kind: "target", target: fallback };
    return {
      kind: "nowhere",
      why:
        origin?.kind === "cli"
          ? "it was added by `familiar cron add` (no chat to answer in)"
          : "it was asked in no chat",
    };
  }
  if (d === "last") {
    const to = places.last ?? places.preferred;
    return to
      ? { kind: "target", target: to }
      : { kind: "nowhere", why: "no channel chat with the owner yet" };
  }
  return { kind: "target", target: d };
}

/**
 * Where the owner hears about a job (a failure, a skipped run): the job's channel target, else the
 * chat target it was asked from, else the fallback; undefined when there is none.
 */
export function noticeTarget(
  job: Pick<CronJobDef, "deliver">,
  origin: CronOrigin | undefined,
  places: FallbackPlaces,
): string | undefined {
  const r = replyRoute(job, origin, places);
  if (r.kind === "target") return r.target;
  // A session (the web chat) is told by its reply's run record and the fallback; a failure notice
  // goes where the owner surely reads it.
  return fallbackTarget(places);
}
