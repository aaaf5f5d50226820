/** Spend against each budget limit (`usage.budgets`), on the usage view: the same figures as `familiar usage`. */
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { Card, Empty, ErrorLine, fmtCost, fmtInt, Table, When } from "../ui";

interface LimitState {
  id: string;
  label: string;
  period: string;
  unit: "usd" | "tokens";
  limit: number;
  spent: number;
  fraction: number;
  resetsAt: number;
}
interface Budgets {
  timezone: string;
  warnAt: number;
  limits: LimitState[];
  cacheHitRateToday: number | null;
}

export function BudgetsCard() {
  const b = useLoad(() => gateway.call<Budgets>("usage.budgets"), []);
  // A finished turn, cron run or heartbeat has spent: refresh the standing.
  useReloadOn(b, ["chat", "cron", "heartbeat", "config.reloaded"]);
  const d = b.data;
  const amount = (unit: LimitState["unit"], v: number): string => (unit === "usd" ? fmtCost(v) : fmtInt(v));
  return (
    <Card title="Budgets" id="budgets">
      <ErrorLine error={b.error} />
      {!d ? (
        <Empty>Loading…</Empty>
      ) : d.limits.length === 0 ? (
        <Empty>No budget limits set (budgets in config.yaml).</Empty>
      ) : (
        <Table>
          <thead>
            <tr>
              <th>Limit</th>
              <th class="num">Spent</th>
              <th class="num">Of</th>
              <th class="num">Used</th>
              <th>Resets</th>
            </tr>
          </thead>
          <tbody>
            {d.limits.map((l) => (
              <tr key={l.id} data-limit={l.id} data-fraction={l.fraction}>
                <td>
                  {l.label} ({l.period})
                </td>
                <td class="num">{amount(l.unit, l.spent)}</td>
                <td class="num">{amount(l.unit, l.limit)}</td>
                <td class="num">
                  <meter min={0} max={1} high={d.warnAt} optimum={0} value={Math.min(1, l.fraction)} />{" "}
                  {Math.round(l.fraction * 100)}%
                </td>
                <td>
                  <When ms={l.resetsAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      {d && d.cacheHitRateToday !== null && (
        <p class="muted">Prompt-cache hit rate today: {Math.round(d.cacheHitRateToday * 100)}%</p>
      )}
    </Card>
  );
}
