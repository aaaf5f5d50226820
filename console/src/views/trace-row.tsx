/**
 * One call of a turn's timeline: what it was and how it ended, in words a person reads ("waiting for
 * approval 42.0 s — approved by owner"), and its bar on the turn's one time axis. Model calls, tool
 * calls, approval waits, retried model attempts and compactions each have their own colour token
 * (tokens.css); the legend names the kinds the turn has.
 */
import type { ComponentChildren } from "preact";
import type { TraceCall } from "../../../internal/agent/trace-wire";
import { Badge, fmtCost, fmtDur, fmtInt } from "../ui";

/** Kinds whose label is a sentence ("waiting for approval …", "… failed — retried …", "compacted …"). */
const DESCRIBED = new Set(["approval", "retry", "compaction"]);

const str = (v: unknown): string => (typeof v === "string" ? v : v == null ? "" : JSON.stringify(v));

/** "approved by owner", "denied in telegram:42", "expired: no answer within 300s". */
function decisionText(d: Record<string, unknown>, running: boolean): string {
  if (running) return "still waiting for an answer";
  const decision = str(d.decision);
  const via = str(d.via);
  // A web chat connection (gateway:conn:N) is the owner in the web chat; a chat target says where.
  const where = !via ? "" : via.startsWith("gateway:") ? " in the web chat" : ` in ${via}`;
  if (decision === "approved") return `approved by owner${where}`;
  if (decision === "denied")
    return str(d.reason) === "denied by the owner" || !d.reason ? `denied by owner${where}` : str(d.reason);
  if (decision === "expired") return `expired: ${str(d.reason) || "no answer in time"}`;
  if (decision === "granted") return "allowed by a standing grant";
  if (decision === "refused") return `refused: ${str(d.reason) || "nobody to ask"}`;
  return decision || "ended";
}

/** The label's main text and the muted line under it (the command asked about, the error). */
export function spanText(c: TraceCall, dur: number): { name: string; sub?: string } {
  const d = c.detail ?? {};
  const running = c.ended_at == null;
  if (c.kind === "approval") {
    const what = str(d.summary) || str(d.action);
    // A standing grant or an unattended refusal did not wait: no duration to speak of.
    const waited = d.decision === "granted" || d.decision === "refused" ? "approval" : "waiting for approval";
    return {
      name: `${waited}${running || dur >= 1 ? ` ${fmtDur(dur)}` : ""} — ${decisionText(d, running)}`,
      ...(what ? { sub: what } : {}),
    };
  }
  if (c.kind === "retry") {
    const next =
      d.next === "fallback"
        ? `fell back to ${str(d.fallback)}`
        : `retried after ${fmtDur(Number(d.wait_ms))}`;
    return { name: `${c.name} failed — ${next}`, sub: `${str(d.code)}: ${str(d.message)}` };
  }
  if (c.kind === "compaction") {
    const why = d.trigger === "overflow" ? "after a context overflow" : "history over the threshold";
    return { name: `compacted ${str(d.messages_before)} → ${str(d.messages_after)} messages (${why})` };
  }
  return { name: c.name };
}

/** A timeline row: label, bar, duration (and a model call's tokens and cost). */
export function TimelineRow(props: { c: TraceCall; start: number; span: number; now: number }) {
  const { c, start, span } = props;
  const dur = (c.ended_at ?? props.now) - c.started_at;
  const indent = c.depth + (c.kind === "turn" ? 0 : 1);
  const state = c.ended_at == null ? "running" : c.status === "error" ? "failed" : c.status;
  const text = spanText(c, dur);
  // An approval's own words say how it ended; a badge repeats only what needs a colour.
  const badge =
    c.kind === "approval"
      ? state === "denied" || state === "expired" || state === "failed"
        ? state
        : undefined
      : state !== "ok"
        ? state
        : undefined;
  return (
    <div class="tl-row">
      <span class="tl-label" style={{ paddingLeft: `${indent * 0.9}rem` }}>
        {/* A wait or detour says what it is in words; the kind tag would repeat it. */}
        {!DESCRIBED.has(c.kind) && <span class="kind">{c.kind}</span>} <span class="name">{text.name}</span>
        {badge && <Badge state={badge} />}
        {c.compacted && <Badge state="compacted">after compaction</Badge>}
        {!!c.overflow_retries && <Badge state="retried">↻ {c.overflow_retries} retry</Badge>}
        {text.sub && (
          <span class="tl-sub" title={text.sub}>
            {text.sub}
          </span>
        )}
      </span>
      <span class="tl-track">
        <span
          class={`tl-bar k-${c.kind} s-${state}`}
          title={`${c.kind} ${fmtDur(dur)}`}
          style={{
            left: `${((c.started_at - start) / span) * 100}%`,
            width: `${Math.max(0.6, (dur / span) * 100)}%`,
          }}
        />
      </span>
      <span class="tl-num num">
        {fmtDur(dur)}
        {c.kind === "model" && (
          <>
            {/* One number per line, right-aligned: never a pair broken at its separator. */}
            <span class="muted tl-sub-num">{fmtInt(c.usage?.input ?? 0)} in</span>
            <span class="muted tl-sub-num">
              {c.cost == null ? "unpriced" : fmtCost(c.cost, c.estimated === true)}
            </span>
          </>
        )}
      </span>
    </div>
  );
}

const KINDS: [string, string][] = [
  ["turn", "turn"],
  ["model", "model call"],
  ["tool", "tool call"],
  ["approval", "waiting for approval"],
  ["retry", "failed attempt, retried"],
  ["compaction", "compaction"],
];

/** Swatches for the kinds of bar this turn has. */
export function TimelineLegend(props: { calls: readonly TraceCall[] }): ComponentChildren {
  const present = new Set(props.calls.map((c) => c.kind));
  const shown = KINDS.filter(([k]) => present.has(k));
  if (shown.length < 2) return null;
  return (
    <ul class="legend tl-legend" aria-label="bar colours">
      {shown.map(([k, label]) => (
        <li key={k}>
          <span class={`sw tl-bar-sw k-${k}`} /> {label}
        </li>
      ))}
    </ul>
  );
}
