/** Usage and cost: 30 days per day as stacked bars split by agent, model or channel; today; top sessions. */
import { useMemo, useState } from "preact/hooks";
import { StackedBars } from "../chart";
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { Card, Empty, ErrorLine, fmtCost, fmtInt, Table, When, estimateTitle } from "../ui";
import { SessionLabel, useSessionNames } from "../names";
import { BudgetsCard } from "./budgets-card";
import { firstShownDay } from "./usage-range";
import { ReconcileCard } from "./reconcile-card";
import type { DailyUsage as Daily, SessionCost as TopSession } from "../../../internal/gateway/usage-wire";

type Split = "byAgent" | "byModel" | "byChannel";
const SPLITS: [Split, string][] = [
  ["byAgent", "Agent"],
  ["byModel", "Model"],
  ["byChannel", "Channel"],
];
const fmtTokens = (v: number): string =>
  v >= 1e6 ? `${(v / 1e6).toFixed(1)}M` : v >= 1e3 ? `${(v / 1e3).toFixed(1)}k` : `${Math.round(v)}`;

/** Short dollar ticks: two significant digits below a cent ($0.0025), cents above. */
const axisCost = (v: number): string =>
  v === 0 ? "$0" : v < 0.01 ? `$${Number(v.toPrecision(2))}` : `$${v.toFixed(2)}`;

export function Usage() {
  const daily = useLoad(() => gateway.call<Daily>("usage.daily", { days: 30 }), []);
  const top = useLoad(
    () => gateway.call<{ sessions: TopSession[] }>("usage.sessions", { days: 30, limit: 10 }),
    [],
  );
  // A finished turn has written its usage rows: refresh the chart and the list.
  useReloadOn(daily, ["chat", "cron", "heartbeat"]);
  useReloadOn(top, ["chat", "cron", "heartbeat"]);
  const [split, setSplit] = useState<Split>("byModel");
  const [metric, setMetric] = useState<"cost" | "tokens">("cost");
  // The daily dollar budget, drawn on the cost chart as a line.
  const budgets = useLoad(
    () =>
      gateway.call<{ limits: { id: string; unit: string; period: string; limit: number; label: string }[] }>(
        "usage.budgets",
      ),
    [],
  );
  useReloadOn(budgets, ["config.reloaded"]);
  const d = daily.data;
  const from = d ? firstShownDay(d.totals.calls) : 0;
  const days = useMemo(() => (d ? d.days.slice(from) : []), [d, from]);
  const series = useMemo(
    () => (d ? d[split].slice(0, 8).map((s) => ({ label: s.key, values: s[metric].slice(from) })) : []),
    [d, split, metric, from],
  );
  const dailyUsd = budgets.data?.limits.find((l) => l.unit === "usd" && /daily/.test(l.period));
  const limit = useMemo(
    () =>
      metric === "cost" && dailyUsd
        ? { value: dailyUsd.limit, label: `${dailyUsd.label} daily budget ${fmtCost(dailyUsd.limit)}` }
        : undefined,
    [metric, dailyUsd?.limit, dailyUsd?.label],
  );
  const names = useSessionNames(top.data?.sessions.map((s) => s.sessionId) ?? []);
  const format = metric === "cost" ? fmtCost : fmtTokens;
  const axis = metric === "cost" ? axisCost : fmtTokens;
  const total30 = d ? d.totals.cost.reduce((a, b) => a + b, 0) : 0;
  const estimated30 = d ? d.totals.estimatedCalls.reduce((a, b) => a + b, 0) : 0;
  const why = (calls: number): string | undefined =>
    calls > 0 && d ? estimateTitle(calls, d.defaultPrice) : undefined;
  return (
    <div class="grid">
      <ErrorLine error={daily.error ?? top.error} />
      <Card title="Today">
        {d ? (
          <dl class="facts" id="today" data-cost={d.today.cost} data-tokens={d.today.tokens}>
            <dt>Cost</dt>
            <dd id="today-cost" title={why(d.today.estimatedCalls)}>
              {fmtCost(d.today.cost, d.today.estimatedCalls > 0)}
            </dd>
            <dt>Tokens</dt>
            <dd>
              {fmtInt(d.today.tokens)} ({fmtInt(d.today.input)} in, {fmtInt(d.today.output)} out)
            </dd>
            <dt>Model calls</dt>
            <dd>{d.today.calls}</dd>
            <dt>30 days</dt>
            <dd title={why(estimated30)}>{fmtCost(total30, estimated30 > 0)}</dd>
          </dl>
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
      <BudgetsCard />
      <ReconcileCard />
      <Card
        title={days.length && days.length < 30 ? `Last ${days.length} days` : "Last 30 days"}
        id="usage-chart"
        actions={
          <>
            <div class="seg" role="group" aria-label="split by">
              {SPLITS.map(([k, label]) => (
                <button type="button" key={k} aria-pressed={split === k} onClick={() => setSplit(k)}>
                  {label}
                </button>
              ))}
            </div>
            <div class="seg" role="group" aria-label="metric">
              <button type="button" aria-pressed={metric === "cost"} onClick={() => setMetric("cost")}>
                Cost
              </button>
              <button type="button" aria-pressed={metric === "tokens"} onClick={() => setMetric("tokens")}>
                Tokens
              </button>
            </div>
          </>
        }
      >
        {d ? (
          <div data-today-cost={d.totals.cost[d.totals.cost.length - 1] ?? 0} class="chart-wrap">
            {series.some((x) => x.values.some((v) => v > 0)) ? (
              <StackedBars days={days} series={series} format={format} axis={axis} limit={limit} />
            ) : (
              <Empty>
                {d.totals.calls.some((c) => c > 0) && metric === "cost"
                  ? "No priced model calls in the last 30 days: the models used have no price in models.pricing. Switch to Tokens to see what they used."
                  : "No model calls in the last 30 days: each day's bar will appear here, split by the model, agent or channel that spent it."}
              </Empty>
            )}
            <details>
              <summary>As a table</summary>
              <Table>
                <thead>
                  <tr>
                    <th>Day ({d.timezone})</th>
                    <th class="num">Cost</th>
                    <th class="num">Tokens</th>
                    <th class="num">Calls</th>
                  </tr>
                </thead>
                <tbody>
                  {d.days
                    .map((day, i) => ({ day, i }))
                    .filter(({ i }) => d.totals.calls[i])
                    .reverse()
                    .map(({ day, i }) => (
                      <tr key={day}>
                        <td>{day}</td>
                        <td class="num" title={why(d.totals.estimatedCalls[i]!)}>
                          {fmtCost(d.totals.cost[i]!, d.totals.estimatedCalls[i]! > 0)}
                        </td>
                        <td class="num">{fmtInt(d.totals.tokens[i]!)}</td>
                        <td class="num">{d.totals.calls[i]}</td>
                      </tr>
                    ))}
                </tbody>
              </Table>
            </details>
          </div>
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
      <Card title="Most expensive sessions (30 days)" id="top-sessions">
        {top.data?.sessions.length ? (
          <Table>
            <thead>
              <tr>
                <th>Session</th>
                <th class="num">Cost</th>
                <th class="num">Tokens</th>
                <th class="num">Calls</th>
                <th>Last</th>
                <th>Call tree</th>
              </tr>
            </thead>
            <tbody>
              {top.data.sessions.map((s) => (
                <tr key={s.sessionId}>
                  <td>
                    <a
                      class="sess-link"
                      href={`#/sessions/${encodeURIComponent(s.agentId ?? "main")}/${encodeURIComponent(s.sessionId)}`}
                    >
                      <SessionLabel
                        sessionKey={s.sessionKey ?? s.sessionId}
                        title={names.name(s.sessionId)?.title}
                      />
                    </a>
                  </td>
                  <td class="num" title={why(s.estimatedCalls)}>
                    {fmtCost(s.cost, s.estimatedCalls > 0)}
                  </td>
                  <td class="num">{fmtInt(s.tokens)}</td>
                  <td class="num">{s.calls}</td>
                  <td>
                    <When ms={s.lastAt} />
                  </td>
                  <td>
                    {s.topRequestId ? (
                      <a class="trace-link" href={`#/traces/${encodeURIComponent(s.topRequestId)}`}>
                        costliest request
                      </a>
                    ) : (
                      "—"
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        ) : (
          <Empty>
            {top.loading
              ? "Loading…"
              : "No sessions with usage yet: each chat that called a model is ranked here by cost."}
          </Empty>
        )}
      </Card>
    </div>
  );
}
