/**
 * Cron schedules: cron expressions (seconds optional, timezone), `every: <duration>` and one-shot
 * `at: <ISO time>`. Pure functions of time: nothing here waits; the services arm timers on a Clock.
 *
 * croner is loaded lazily and synchronously (createRequire) the first time a cron expression is parsed,
 * so a config without cron expressions never pays for it and zod refinements can stay synchronous.
 */
import { createRequire } from "node:module";
import { formatDuration, parseDuration } from "./duration.js";
import { isTimeZone, isUtcZone, zoneOffset } from "./zoned-time.js";

type CronerModule = typeof import("croner");
type CronInstance = InstanceType<CronerModule["Cron"]>;

let croner: CronerModule | undefined;
function loadCroner(): CronerModule {
  if (!croner) croner = createRequire(import.meta.url)("croner") as CronerModule;
  return croner;
}

/** A normalized schedule. `every` is in ms; `at` is an epoch-ms instant. */
export type Schedule =
  | { kind: "cron"; expr: string; timezone: string }
  | { kind: "every"; everyMs: number }
  | { kind: "at"; at: number };

/** The schedule fields of a job as written in config or given at creation. */
export interface ScheduleInput {
  cron?: string | undefined;
  every?: number | undefined;
  at?: string | undefined;
  timezone?: string | undefined;
}

/** Typed error for a schedule that cannot be used; `field` names the offending key. */
export class ScheduleError extends Error {
  readonly code = "CRON_INVALID_SCHEDULE";
  /** The message without the offending value (config errors add "got ..." themselves). */
  readonly expected: string;
  constructor(
    readonly field: "cron" | "every" | "at" | "timezone" | "schedule",
    expected: string,
    got?: string,
  ) {
    super(got === undefined ? expected : `${expected}, got ${got}`);
    this.expected = expected;
    this.name = "ScheduleError";
  }
}

/** Smallest allowed `every` (1 s): anything shorter is a busy loop, not a schedule. */
export const MIN_EVERY_MS = 1000;

const cronCache = new Map<string, CronInstance>();

function cronFor(expr: string, timezone: string): CronInstance {
  const key = `${timezone}\u0000${expr}`;
  let c = cronCache.get(key);
  if (!c) {
    const { Cron } = loadCroner();
    // paused + no callback: croner only computes instants, it never schedules anything itself.
    // UTC as an offset: croner then computes with Date.UTC and never builds an Intl formatter (see
    // zoned-time.ts for why a UTC daemon keeps ICU unloaded); the instants are the same.
    const zone = isUtcZone(timezone) ? { utcOffset: 0 } : { timezone };
    c = new Cron(expr, { ...zone, paused: true, mode: "5-or-6-parts" });
    if (cronCache.size > 500) cronCache.clear();
    cronCache.set(key, c);
  }
  return c;
}

/**
 * Parses and validates schedule fields. `defaultTimezone` (the owner's) applies when the job names
 * none. Throws {@link ScheduleError} with a message that says what is wrong and what is expected.
 */
export function parseSchedule(input: ScheduleInput, defaultTimezone: string): Schedule {
  const given = (["cron", "every", "at"] as const).filter((k) => input[k] !== undefined);
  if (given.length !== 1)
    throw new ScheduleError(
      "schedule",
      given.length === 0
        ? "expected one of cron, every or at"
        : `expected exactly one of cron, every or at, got ${given.join(" and ")}`,
    );
  const timezone = input.timezone ?? defaultTimezone;
  if (!isTimeZone(timezone))
    throw new ScheduleError("timezone", "expected an IANA time zone such as Europe/Berlin", `"${timezone}"`);
  if (input.cron !== undefined) {
    const expr = input.cron.trim();
    try {
      const c = cronFor(expr, timezone);
      if (!c.nextRun(new Date(0)) && !c.nextRun()) throw new Error("the expression never matches a date");
    } catch (err) {
      throw new ScheduleError(
        "cron",
        `invalid cron expression: ${(err as Error).message} (expected 5 fields "min hour day month weekday", or 6 with seconds first)`,
        `"${input.cron}"`,
      );
    }
    return { kind: "cron", expr, timezone };
  }
  if (input.every !== undefined) {
    if (!Number.isFinite(input.every) || input.every < MIN_EVERY_MS)
      throw new ScheduleError("every", "expected a duration of at least 1s", String(input.every));
    return { kind: "every", everyMs: input.every };
  }
  const at = parseAt(String(input.at), timezone);
  if (at === undefined)
    throw new ScheduleError(
      "at",
      'expected an ISO time such as 2026-03-29T09:00 (owner\'s time zone) or 2026-03-29T07:00:00Z, or (when adding a job) a time from now such as 2m, +2m or "in 2 hours"',
      `"${input.at}"`,
    );
  return { kind: "at", at };
}

/** Returns the problem with a schedule as one message, or undefined when it is valid. */
export function scheduleProblem(
  input: ScheduleInput,
  defaultTimezone = "UTC",
): { field: ScheduleError["field"]; message: string } | undefined {
  try {
    parseSchedule(input, defaultTimezone);
    return undefined;
  } catch (err) {
    if (err instanceof ScheduleError) return { field: err.field, message: err.expected };
    throw err;
  }
}

const UNIT_WORDS: [RegExp, string][] = [
  [/^(s|secs?|seconds?)$/i, "s"],
  [/^(m|mins?|minutes?)$/i, "m"],
  [/^(h|hrs?|hours?)$/i, "h"],
  [/^(d|days?)$/i, "d"],
];

/**
 * A one-shot time relative to `now` (issue 47: "remind me in 2 minutes"): `2m`, `+2m`, `in 2m`,
 * `in 2 hours`, `1h30m`, `in 1 hour 30 minutes`. Returns the absolute instant as an ISO string (UTC),
 * or undefined when `text` is not a relative time. Resolved once, when the job is made: a stored job
 * always holds the absolute time, so a restart never moves it.
 */
export function relativeAt(text: string, now: number): string | undefined {
  const body = text
    .trim()
    .replace(/^(\+|in\s+)/i, "")
    .trim();
  if (!/^\d/.test(body)) return undefined;
  const parts = body.match(/\d+\s*[a-z]+/gi);
  if (!parts || parts.join("").replace(/\s/g, "") !== body.replace(/\s|,|and/gi, "")) return undefined;
  let compact = "";
  for (const p of parts) {
    const [, n, word] = /^(\d+)\s*([a-z]+)$/i.exec(p) ?? [];
    const unit = UNIT_WORDS.find(([re]) => re.test(word ?? ""))?.[1];
    if (!n || !unit) return undefined;
    compact += `${n}${unit}`;
  }
  const ms = parseDuration(compact);
  if (ms === undefined || ms <= 0) return undefined;
  return new Date(now + ms).toISOString();
}

const ISO_LOCAL = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;

/**
 * Parses an ISO time. With an offset or `Z` it is absolute; without one it is a wall-clock time in
 * `timezone` (a reminder "at 2026-03-29T09:00" means 09:00 where the owner lives).
 */
export function parseAt(text: string, timezone: string): number | undefined {
  const s = text.trim();
  const m = ISO_LOCAL.exec(s);
  if (m) {
    const [y, mo, d, h, mi, sec, ms] = m.slice(1).map((v) => (v === undefined ? 0 : Number(v)));
    if (mo! < 1 || mo! > 12 || d! < 1 || d! > 31 || h! > 23 || mi! > 59 || sec! > 59) return undefined;
    return zonedToUtc(y!, mo!, d!, h!, mi!, sec!, ms!, timezone);
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(s)) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

function zonedToUtc(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  ms: number,
  timezone: string,
): number {
  const wall = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  // Two passes settle the offset on both sides of a DST change; a wall time that does not exist
  // (spring forward gap) lands just after the gap, like a clock that was moved forward.
  let t = wall - zoneOffset(wall, timezone);
  t = wall - zoneOffset(t, timezone);
  return t;
}

/**
 * The first run instant strictly after `from`, or undefined when there is none (a past `at`).
 * `anchor` is when an `every` schedule started counting (its runs are anchor + k * every, k >= 1).
 */
export function nextRunAfter(s: Schedule, from: number, anchor: number): number | undefined {
  switch (s.kind) {
    case "cron": {
      const next = cronFor(s.expr, s.timezone).nextRun(new Date(from));
      return next ? next.getTime() : undefined;
    }
    case "every": {
      const k = Math.max(1, Math.floor((from - anchor) / s.everyMs) + 1);
      return anchor + k * s.everyMs;
    }
    case "at":
      return s.at > from ? s.at : undefined;
  }
}

/** A stable key of a schedule: state is reset when it changes (new anchor, no stale catch-up). */
export function scheduleKey(s: Schedule): string {
  return JSON.stringify(s);
}

/** Human text of a schedule for lists: `cron 0 9 * * * (Europe/Berlin)`, `every 30m`, `at 2026-...`. */
export function describeSchedule(s: Schedule): string {
  switch (s.kind) {
    case "cron":
      return `cron ${s.expr} (${s.timezone})`;
    case "every":
      return `every ${formatDuration(s.everyMs)}`;
    case "at":
      return `at ${new Date(s.at).toISOString()}`;
  }
}
