/**
 * Traces: the recent turns (newest, slowest, costliest, failed) and one turn as a timeline: turns,
 * model calls, tool calls, approval waits, retried attempts and compactions as bars on one time axis
 * (trace-row.tsx), each model call with where its prompt's tokens went and what was cached
 * (`GET /api/traces`, `GET /api/traces/{id}`; `familiar trace` prints the same).
 */
import { useState } from "preact/hooks";
import { api } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import type { TraceCall, TraceReport as Report } from "../../../internal/agent/trace-wire";
import { Badge, Card, Empty, ErrorLine, fmtCost, fmtDur, fmtInt, Table, When } from "../ui";
import { TimelineLegend, TimelineRow } from "./trace-row";

interface Item {
  request_id: string;
  agent_id: string | null;
  session_id: string | null;
  status: string;
  started_at: number;
  duration_ms: number | null;
  model_calls: number;
  tool_calls: number;
  turns: number;
  tokens: number;
  cost: number;
  unpriced_calls: number;
  models: string[];
  error: string | null;
}
type Sort = "newest" | "slowest" | "costliest";
type Filter = "" | "failed" | "running";

/** The trace list prices from models.pricing only: an unpriced call is named, never guessed. */
const costText = (cost: number, unpriced: number): string =>
  unpriced > 0 && cost === 0 ? "unpriced" : fmtCost(cost) + (unpriced > 0 ? ` + ${unpriced} unpriced` : "");

export function Traces(props: { id: string | undefined }) {
  return props.id ? <TraceTimeline id={props.id} /> : <TraceList />;
}

function TraceList() {
  const [sort, setSort] = useState<Sort>("newest");
  const [filter, setFilter] = useState<Filter>("");
  const [input, setInput] = useState("");
  const list = useLoad(
    () => api<{ traces: Item[] }>(`/api/traces?limit=50&sort=${sort}${filter ? `&status=${filter}` : ""}`),
    [sort, filter],
  );
  useReloadOn(list, ["chat", "cron", "heartbeat"]);
  const seg = <T extends string>(value: T, set: (v: T) => void, opts: [T, string][], label: string) => (
    <div class="seg" role="group" aria-label={label}>
      {opts.map(([k, l]) => (
        <button type="button" key={k} aria-pressed={value === k} onClick={() => set(k)}>
          {l}
        </button>
      ))}
    </div>
  );
  return (
    <div class="grid">
      <Card
        title="Recent turns"
        id="trace-list"
        actions={
          <>
            {seg(
              sort,
              setSort,
              [
                ["newest", "Newest"],
                ["slowest", "Slowest"],
                ["costliest", "Costliest"],
              ],
              "sort",
            )}
            {seg(
              filter,
              setFilter,
              [
                ["", "All"],
                ["failed", "Failed"],
                ["running", "Running"],
              ],
              "filter",
            )}
          </>
        }
      >
        <ErrorLine error={list.error} />
        {list.data?.traces.length ? (
          <Table label="recent turns">
            <thead>
              <tr>
                <th>When</th>
                <th>Turn</th>
                <th>Status</th>
                <th class="num">Duration</th>
                <th class="num">Calls</th>
                <th class="num">Tokens</th>
                <th class="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {list.data.traces.map((t) => (
                <tr key={t.request_id} data-request={t.request_id} data-status={t.status}>
                  <td>
                    <When ms={t.started_at} />
                  </td>
                  <td class="long">
                    <a class="trace-open" href={`#/traces/${encodeURIComponent(t.request_id)}`}>
                      <code>{t.request_id.slice(0, 8)}</code>
                    </a>{" "}
                    <span class="muted">
                      {t.agent_id ?? "?"}
                      {t.models.length > 0 && ` · ${t.models.join(", ")}`}
                    </span>
                    {t.error && <div class="error">{t.error}</div>}
                  </td>
                  <td>
                    <Badge
                      state={t.duration_ms == null ? "running" : t.status === "error" ? "failed" : t.status}
                    />
                  </td>
                  <td class="num">{fmtDur(t.duration_ms)}</td>
                  <td class="num" title={`${t.model_calls} model, ${t.tool_calls} tool, ${t.turns} turn(s)`}>
                    {t.model_calls} + {t.tool_calls}
                  </td>
                  <td class="num">{fmtInt(t.tokens)}</td>
                  <td class="num">{costText(t.cost, t.unpriced_calls)}</td>
                </tr>
              ))}
            </tbody>
          </Table>
        ) : (
          <Empty>
            {list.loading
              ? "Loading the recent turns…"
              : filter
                ? `No ${filter} turns among the last 500.`
                : "No turns yet: every message the assistant answers appears here with its duration, calls and cost."}
          </Empty>
        )}
        <p class="muted">
          Calls are model + tool calls. A request id from a log line or `familiar chat --verbose` opens below.
        </p>
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            if (input.trim()) location.hash = `#/traces/${encodeURIComponent(input.trim())}`;
          }}
        >
          <label for="trace-id">Request id</label>
          <input
            id="trace-id"
            value={input}
            onInput={(e) => setInput(e.currentTarget.value)}
            placeholder="req-…"
          />
          <button type="submit">Open</button>
        </form>
      </Card>
    </div>
  );
}

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

function TraceTimeline(props: { id: string }) {
  const t = useLoad(() => api<Report>(`/api/traces/${encodeURIComponent(props.id)}`), [props.id]);
  const r = t.data;
  const start = r?.calls.reduce((m, c) => Math.min(m, c.started_at), Number.POSITIVE_INFINITY) ?? 0;
  const now = Date.now();
  const end = r?.calls.reduce((m, c) => Math.max(m, c.ended_at ?? now), 0) ?? 0;
  const span = Math.max(1, end - start);
  return (
    <div class="grid">
      <p>
        <a href="#/traces">← Recent turns</a>
      </p>
      <Card title={`Turn ${props.id.slice(0, 8)}`} id="trace">
        <ErrorLine error={t.error} />
        {r ? (
          <>
            <dl class="facts" id="trace-totals">
              <dt>Started</dt>
              <dd>
                <When ms={start} /> · took {fmtDur(end - start)}
              </dd>
              <dt>Calls</dt>
              <dd>
                {r.totals.requests} turn(s), {r.totals.model_calls} model call(s), {r.totals.tool_calls} tool
                call(s), depth {r.totals.max_depth}
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
