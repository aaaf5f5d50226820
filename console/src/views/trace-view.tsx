/**
 * One turn as a timeline (`GET /api/traces/{id}`): titled by its question, amber while it waits for
 * the owner, each model call with where its prompt's tokens went and what was cached.
 */
import { api } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import type { TraceCall, TraceReport as Report } from "../../../internal/agent/trace-wire";
import { channelLabel, channelOf } from "../names";
import { Card, Empty, ErrorLine, fmtCost, fmtDur, fmtInt, When } from "../ui";
import { TimelineLegend, TimelineRow } from "./trace-row";
import type { TraceItem as Item } from "./traces";

const PARTS: [keyof NonNullable<TraceCall["prompt"]>, string][] = [
  ["system", "system prompt"],
  ["tools", "tool schemas"],
  ["history", "history"],
  ["tool_results", "tool results"],
  ["new_message", "new message"],
];

/** Where a model call's input tokens went: the prompt's parts scaled to the reported input, and the cache. */
function TokenBreakdown(props: { c: TraceCall }) {
  const u = props.c.usage;
  const p = props.c.prompt;
  if (!u) return null;
  const chars = p ? PARTS.reduce((a, [k]) => a + p[k], 0) : 0;
  return (
    <div class="breakdown" data-breakdown>
      {p && chars > 0 ? (
        <>
          <div class="stack" aria-hidden="true">
            {PARTS.map(([k]) => (
              <span key={k} class={`part p-${k}`} style={{ width: `${(p[k] / chars) * 100}%` }} />
            ))}
          </div>
          <ul class="legend">
            {PARTS.map(([k, label]) => (
              <li key={k}>
                <span class={`sw p-${k}`} /> {label}{" "}
                <span class="num">≈{fmtInt((p[k] / chars) * u.input)}</span>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p class="muted">No breakdown: this call was recorded before the daemon stored one.</p>
      )}
      <p class="muted">
        {fmtInt(u.input)} in ({fmtInt(u.cacheRead)} read from cache
        {u.input > 0 && `, ${Math.round((u.cacheRead / u.input) * 100)}%`}
        {u.cacheWrite > 0 && `, ${fmtInt(u.cacheWrite)} written to it`}) · {fmtInt(u.output)} out
        {u.reasoning > 0 && ` (${fmtInt(u.reasoning)} reasoning)`}. Shares are estimated from the prompt's
        characters.
      </p>
    </div>
  );
}

export function TraceTimeline(props: { id: string }) {
  const t = useLoad(() => api<Report>(`/api/traces/${encodeURIComponent(props.id)}`), [props.id]);
  const r = t.data;
  const start = r?.calls.reduce((m, c) => Math.min(m, c.started_at), Number.POSITIVE_INFINITY) ?? 0;
  const now = Date.now();
  const end = r?.calls.reduce((m, c) => Math.max(m, c.ended_at ?? now), 0) ?? 0;
  const span = Math.max(1, end - start);
  // The turn's question (the list item of its session), for the card's title.
  const sid = r?.calls.find((c) => c.depth === 0)?.session_id ?? null;
  const item = useLoad(
    () =>
      sid
        ? api<{ traces: Item[] }>(`/api/traces?session=${encodeURIComponent(sid)}&limit=200`).then((x) =>
            x.traces.find((i) => i.request_id === props.id),
          )
        : Promise.resolve(undefined),
    [sid, props.id],
  );
  useReloadOn(t, ["chat"]);
  const retried = r?.calls.filter((c) => c.kind === "retry").length ?? 0;
  const waiting = !!r?.calls.some((c) => c.kind === "approval" && c.ended_at == null);
  const title = item.data?.question ? `“${item.data.question}”` : `Turn ${props.id.slice(0, 8)}`;
  return (
    <div class="grid">
      <p>
        <a href="#/traces">← Recent turns</a>
      </p>
      <Card title={title} id="trace">
        <ErrorLine error={t.error} />
        {waiting && (
          <p class="waiting-line" id="trace-waiting">
            <strong>Waiting for you:</strong> a tool call needs your approval.{" "}
            <a href="#/approvals">Answer it in Approvals →</a>
          </p>
        )}
        {r ? (
          <>
            <dl class="facts" id="trace-totals">
              <dt>Request</dt>
              <dd>
                <code>{props.id}</code>
                {item.data?.session_key && (
                  <span class="muted"> · {channelLabel(channelOf(item.data.session_key))}</span>
                )}
              </dd>
              <dt>Started</dt>
              <dd>
                <When ms={start} /> · took {fmtDur(end - start)}
              </dd>
              <dt>Calls</dt>
              <dd>
                {r.totals.requests} turn(s), {r.totals.model_calls} model call(s), {r.totals.tool_calls} tool
                call(s), depth {r.totals.max_depth}
                {retried > 0 && (
                  <span class="retries-inline" data-retries={retried}>
                    {" "}
                    · ↻ {retried} model call{retried === 1 ? "" : "s"} retried after an upstream error
                  </span>
                )}
              </dd>
              <dt>Tokens</dt>
              <dd>
                {fmtInt(r.totals.usage.input)} in ({fmtInt(r.totals.usage.cacheRead)} cached) /{" "}
                {fmtInt(r.totals.usage.output)} out
              </dd>
              <dt>Cost</dt>
              <dd>
                {/* The call tree counts an unpriced call at budgets.default_price, marked ≈ (an estimate). */}
                <strong>{fmtCost(r.totals.cost, r.totals.unpriced_calls > 0)}</strong>
              </dd>
            </dl>
            <div class="axis" aria-hidden="true">
              <span>0</span>
              <span>{fmtDur(span / 2)}</span>
              <span>{fmtDur(span)}</span>
            </div>
            <TimelineLegend calls={r.calls} />
            <ol class="timeline" aria-label="timeline of the turn">
              {r.calls.map((c) => {
                const row = <TimelineRow c={c} start={start} span={span} now={now} />;
                return (
                  <li key={c.id} class={`tl ${c.kind}`} data-kind={c.kind} data-status={c.status}>
                    {c.kind === "model" ? (
                      <details>
                        <summary>{row}</summary>
                        <TokenBreakdown c={c} />
                      </details>
                    ) : (
                      row
                    )}
                  </li>
                );
              })}
            </ol>
            <p class="muted">
              {r.calls.some((c) => c.kind === "approval") &&
                "A tool call's bar includes its wait for the owner's approval, drawn as its own striped bar. "}
              Open a model call for where its tokens went.
            </p>
          </>
        ) : (
          !t.error && <Empty>Loading the turn's calls…</Empty>
        )}
      </Card>
    </div>
  );
}
