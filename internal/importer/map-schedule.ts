/**
 * OpenClaw heartbeat settings and cron jobs -> Familiar `heartbeat` and `cron.jobs`.
 *
 * Cron jobs come from OpenClaw's store (state/openclaw.sqlite `cron_jobs.job_json`): schedule
 * (`cron` expr + `tz`, `every` ms, `at`), `payload.message`, `sessionTarget`, `delivery`
 * (`announce` to `channel`/`to`), `enabled`. Jobs OpenClaw declares for itself (heartbeat monitor,
 * memory dreaming, skill review: they carry a `declaration_key`) are skipped; the heartbeat comes
 * from its config instead. Command and script payloads run code on the host and are never imported.
 * A job's id in Familiar is `openclaw-<slug of its name>`, stable across runs, so a second import
 * updates the same entry.
 *
 * Every job comes in, a disabled one disabled. An `every` schedule is OpenClaw's `everyMs` or an
 * `every` of `"4h"`, `"30m"` or milliseconds; it is checked in milliseconds and written as a
 * duration. A heartbeat or a job that would deliver to a chat that is not the owner's (not in an
 * allow list or pairing the owner has or accepted) is asked (consent.ts), never carried silently:
 * it would send the assistant's words, and what it read, to a stranger.
 */
import { formatDuration, parseDuration } from "../config/duration.js";
import { scheduleProblem } from "../config/schedule.js";
import type { OpenClawCronRow } from "./openclaw-db.js";
import { Consent, gate } from "./consent.js";
import { obj, str, type Json } from "./openclaw-source.js";
import type { ImportItem, PlannedConfig } from "./import-types.js";

export function slug(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 48) || "job"
  );
}

/** True when `<channel>:<id>` is one of the owner's own chats (allowed, paired or accepted). */
export type IsOwner = (target: string) => boolean;

export function mapHeartbeat(
  config: Json,
  refMap: (r: string) => string | undefined,
  consent: Consent = new Consent(),
  isOwner: IsOwner = () => false,
): { planned: PlannedConfig[]; items: ImportItem[] } {
  const defaults = obj(obj(config.agents).defaults);
  const hb = obj(defaults.heartbeat);
  const planned: PlannedConfig[] = [];
  const items: ImportItem[] = [];
  if (Object.keys(hb).length === 0) return { planned, items };
  const edits: PlannedConfig["edits"] = [];
  const every = hb.every === undefined ? undefined : parseDuration(String(hb.every));
  if (every !== undefined)
    edits.push({ kind: "set", path: ["heartbeat", "every"], value: formatDuration(every) });
  const target = str(hb.target) ?? "owner";
  let stranger: string | undefined;
  if (target === "last" || target === "none")
    edits.push({ kind: "set", path: ["heartbeat", "target"], value: target });
  else if (str(hb.to) && target !== "owner") {
    const to = `${target}:${String(hb.to)}`;
    if (isOwner(to)) edits.push({ kind: "set", path: ["heartbeat", "target"], value: to });
    else stranger = to;
  } else
    items.push({
      area: "heartbeat",
      name: `target ${target}`,
      status: "cannot",
      detail: "Familiar sends heartbeats to last | none | <channel>:<id>; kept last",
    });
  const ah = obj(hb.activeHours);
  const start = str(ah.start);
  const end = str(ah.end);
  if (start && end && /^\d{2}:\d{2}$/.test(start) && /^\d{2}:\d{2}$/.test(end)) {
    const active: Record<string, string> = { start, end: end === "24:00" ? "23:59" : end };
    const tz = str(ah.timezone) ?? str(ah.tz);
    if (tz) active.timezone = tz;
    edits.push({ kind: "set", path: ["heartbeat", "active_hours"], value: active });
  }
  if (str(hb.prompt)) edits.push({ kind: "set", path: ["heartbeat", "prompt"], value: str(hb.prompt) });
  const model = str(hb.model);
  if (model) {
    const m = refMap(model);
    if (m) edits.push({ kind: "set", path: ["heartbeat", "model"], value: m });
    else
      items.push({
        area: "heartbeat",
        name: `model ${model}`,
        status: "cannot",
        detail: "its provider was not imported; the agent's model is used",
      });
  }
  if (str(hb.agentId)) edits.push({ kind: "set", path: ["heartbeat", "agent"], value: str(hb.agentId) });
  planned.push({
    item: {
      area: "heartbeat",
      name: "heartbeat",
      detail: `every ${every === undefined ? "30m" : formatDuration(every)}${start ? `, ${start}-${end ?? ""}` : ""}`,
    },
    edits,
  });
  if (stranger) {
    const p = gate(
      consent,
      "heartbeat.target",
      "not one of your chats: the heartbeat's words would go to whoever that is",
      {
        item: { area: "heartbeat", name: `heartbeat target ${stranger}` },
        edits: [{ kind: "set", path: ["heartbeat", "target"], value: stranger }],
      },
      items,
    );
    if (p) planned.push(p);
  }
  return { planned, items };
}

/** OpenClaw's `every` (ms number, or a duration such as "4h") in milliseconds; undefined when neither. */
function everyMs(s: Json): number | undefined {
  const v = typeof s.everyMs === "number" ? s.everyMs : s.every;
  const ms = typeof v === "number" || typeof v === "string" ? parseDuration(v) : undefined;
  return ms !== undefined && ms > 0 ? ms : undefined;
}

function scheduleOf(job: Json): Record<string, unknown> | string {
  const s = obj(job.schedule);
  const kind = str(s.kind);
  if (kind === "cron" && str(s.expr))
    return { cron: str(s.expr), ...(str(s.tz) ? { timezone: str(s.tz) } : {}) };
  const ms = kind === "every" ? everyMs(s) : undefined;
  if (ms !== undefined) return { every: formatDuration(ms) };
  if (kind === "at") {
    const at = typeof s.atMs === "number" ? new Date(s.atMs).toISOString() : str(s.at);
    if (at) return { at, ...(str(s.tz) ? { timezone: str(s.tz) } : {}) };
  }
  return `schedule ${JSON.stringify(s)} has no Familiar equivalent`;
}

export function mapCron(
  rows: OpenClawCronRow[],
  refMap: (r: string) => string | undefined,
  agentMap: (id: string) => string | undefined,
  consent: Consent = new Consent(),
  isOwner: IsOwner = () => false,
): { planned: PlannedConfig[]; items: ImportItem[] } {
  const planned: PlannedConfig[] = [];
  const items: ImportItem[] = [];
  const used = new Set<string>();
  for (const r of rows) {
    const label = r.name || r.id;
    if (r.declarationKey) {
      items.push({
        area: "cron",
        name: label,
        status: "skip",
        detail: `managed by OpenClaw itself (${r.declarationKey})`,
      });
      continue;
    }
    const payload = obj(r.job.payload);
    const kind = str(payload.kind);
    const message =
      kind === "agentTurn" ? str(payload.message) : kind === "systemEvent" ? str(payload.text) : undefined;
    if (!message) {
      items.push({
        area: "cron",
        name: label,
        status: "cannot",
        detail:
          kind === "command" || kind === "script"
            ? `a ${kind} job runs code on the host; recreate it by hand if you trust it`
            : `payload "${kind ?? "?"}" has no Familiar equivalent`,
      });
      continue;
    }
    const sched = scheduleOf(r.job);
    if (typeof sched === "string") {
      items.push({ area: "cron", name: label, status: "cannot", detail: sched });
      continue;
    }
    let id = `openclaw-${slug(label)}`;
    for (let n = 2; used.has(id); n++) id = `openclaw-${slug(label)}-${n}`;
    used.add(id);
    const job: Record<string, unknown> = { id, ...sched, message };
    const agent = r.agentId ?? str(r.job.agentId);
    if (agent) {
      const a = agentMap(agent);
      if (a) job.agent = a;
    }
    const model = str(payload.model);
    if (model && refMap(model)) job.model = refMap(model);
    const target = str(r.job.sessionTarget) ?? "isolated";
    job.session = target === "main" ? "main" : "isolated";
    const delivery = obj(r.job.delivery);
    const mode = str(delivery.mode) ?? "none";
    const channel = str(delivery.channel);
    const to = delivery.to === undefined ? undefined : String(delivery.to);
    job.deliver =
      mode === "none" ? "none" : channel && channel !== "last" && to ? `${channel}:${to}` : "last";
    job.enabled = r.enabled;
    job.light_context = payload.lightContext === true;
    // The check wants milliseconds; config.yaml gets the duration text.
    const problem = scheduleProblem({
      ...(job as Parameters<typeof scheduleProblem>[0]),
      every: typeof job.every === "string" ? parseDuration(job.every) : undefined,
    });
    if (problem) {
      items.push({ area: "cron", name: label, status: "cannot", detail: problem.message });
      continue;
    }
    const when = String(job.cron ?? job.every ?? job.at);
    const p: PlannedConfig = {
      item: {
        area: "cron",
        name: `${label} -> ${id}`,
        detail: `${when}${job.timezone ? ` ${String(job.timezone)}` : ""}, deliver ${String(job.deliver)}${r.enabled ? "" : ", disabled"}`,
      },
      edits: [{ kind: "cron", job }],
    };
    const deliver = String(job.deliver);
    const g =
      deliver === "none" || deliver === "last" || isOwner(deliver)
        ? p
        : gate(
            consent,
            `cron:${id}`,
            `delivers to ${deliver}, not one of your chats: its output would go to whoever that is`,
            p,
            items,
          );
    if (!g) continue;
    planned.push(g);
    if (target !== "main" && target !== "isolated")
      items.push({
        area: "cron",
        name: `${label} session ${target}`,
        status: "cannot",
        detail: "runs in a fresh (isolated) session in Familiar",
      });
  }
  return { planned, items };
}
