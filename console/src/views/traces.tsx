/** Traces: the call tree of one request (turns, model calls, tool calls, subagents), as `familiar trace`. */
import { useState } from "preact/hooks";
import { api } from "../gateway";
import { useLoad } from "../hooks";
import type { TraceReport as Report } from "../../../internal/agent/trace-wire";
import { Badge, Card, Empty, ErrorLine, fmtCost, fmtDur, fmtInt, fmtTime, estimateTitle } from "../ui";

export function Traces(props: { id: string | undefined }) {
  const [input, setInput] = useState(props.id ?? "");
  return (
    <div class="grid">
      <Card title="Open a trace">
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
            placeholder="request id from a reply, a log line or the usage list"
          />
          <button type="submit">Open</button>
        </form>
      </Card>
      {props.id ? (
        <TraceTree id={props.id} />
      ) : (
        <Empty>Pick a request from Usage or a session transcript.</Empty>
      )}
    </div>
  );
}

function TraceTree(props: { id: string }) {
  const t = useLoad(() => api<Report>(`/api/traces/${encodeURIComponent(props.id)}`), [props.id]);
  const r = t.data;
  const start = r?.calls.reduce((m, c) => Math.min(m, c.started_at), Number.POSITIVE_INFINITY) ?? 0;
  const end = r?.calls.reduce((m, c) => Math.max(m, c.ended_at ?? c.started_at), 0) ?? 0;
  const span = Math.max(1, end - start);
  return (
    <Card title={`Trace ${props.id.slice(0, 12)}`} id="trace">
      <ErrorLine error={t.error} />
      {r ? (
        <>
          <p class="totals" id="trace-totals">
            {r.totals.requests} turn(s), {r.totals.model_calls} model call(s), {r.totals.tool_calls} tool
            call(s), depth {r.totals.max_depth} · {fmtInt(r.totals.usage.input)} in /{" "}
            {fmtInt(r.totals.usage.output)} out ·{" "}
            <strong
              title={
                r.totals.unpriced_calls > 0
                  ? estimateTitle(r.totals.unpriced_calls, r.totals.default_price)
                  : undefined
              }
            >
              {fmtCost(r.totals.cost, r.totals.unpriced_calls > 0)}
            </strong>{" "}
            · {fmtTime(start)} · {fmtDur(end - start)}
          </p>
          <ol class="tree" role="tree" aria-label="call tree">
            {r.calls.map((c) => {
              const dur = c.ended_at != null ? c.ended_at - c.started_at : null;
              const indent = c.depth + (c.kind === "turn" ? 0 : 1);
              return (
                <li
                  key={c.id}
                  role="treeitem"
                  class={`call ${c.kind}`}
                  style={{ paddingLeft: `${indent * 1.2}rem` }}
                  data-kind={c.kind}
                >
                  <span class="kind">{c.kind}</span> <span class="name">{c.name}</span>{" "}
                  <Badge state={c.status} />
                  <span class="muted">
                    {" "}
                    {fmtDur(dur)}
                    {c.usage && ` · ${fmtInt(c.usage.input)} in / ${fmtInt(c.usage.output)} out`}
                    {c.kind === "model" && c.cost != null && ` · ${fmtCost(c.cost, c.estimated === true)}`}
                    {c.kind === "turn" && c.agent_id && ` · agent ${c.agent_id}`}
                  </span>
                  <span class="bar" aria-hidden="true">
                    <span
                      style={{
                        marginLeft: `${((c.started_at - start) / span) * 100}%`,
                        width: `${Math.max(0.5, ((dur ?? 0) / span) * 100)}%`,
                      }}
                    />
                  </span>
                </li>
              );
            })}
          </ol>
        </>
      ) : (
        !t.error && <Empty>Loading…</Empty>
      )}
    </Card>
  );
}
