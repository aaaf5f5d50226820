/**
 * Traces: the recent turns (newest, slowest, costliest, failed) and one turn as a timeline: turns,
 * model calls, tool calls, approval waits, retried attempts and compactions as bars on one time axis
 * (trace-row.tsx), each model call with where its prompt's tokens went and what was cached
 * (`GET /api/traces`, `GET /api/traces/{id}`; `familiar trace` prints the same).
 */
import { useState } from "preact/hooks";
import { api } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { ChannelIcon, channelLabel, channelOf } from "../names";
import { Badge, Card, Empty, ErrorLine, estimateTitle, fmtCost, fmtDur, fmtInt, Table, When } from "../ui";
import { TraceTimeline } from "./trace-view";

/** One turn of `GET /api/traces`. */
export interface TraceItem {
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
  /** Cost with unpriced calls at budgets.default_price (older daemons: absent). */
  estimated_cost?: number;
  retries?: number;
  waiting?: boolean;
  session_key?: string | null;
  question?: string | null;
}
type Sort = "newest" | "slowest" | "costliest";
type Filter = "" | "failed" | "running";

/** Priced calls at their price; a turn with unpriced calls shows the estimate at budgets.default_price (≈). */
const costText = (t: TraceItem): string =>
  t.unpriced_calls > 0 && t.estimated_cost !== undefined
    ? fmtCost(t.estimated_cost, true)
    : t.unpriced_calls > 0 && t.cost === 0
      ? "unpriced"
      : fmtCost(t.cost);

/** A turn's state in words: a turn that waits for the owner says so (amber), not "running". */
const turnState = (t: TraceItem): string =>
  t.duration_ms == null
    ? t.waiting
      ? "waiting for you"
      : "running"
    : t.status === "error"
      ? "failed"
      : t.status;

export function Traces(props: { id: string | undefined }) {
  return props.id ? <TraceTimeline id={props.id} /> : <TraceList />;
}

function TraceList() {
  const [sort, setSort] = useState<Sort>("newest");
  const [filter, setFilter] = useState<Filter>("");
  const [input, setInput] = useState("");
  const list = useLoad(
    () =>
      api<{ traces: TraceItem[] }>(`/api/traces?limit=50&sort=${sort}${filter ? `&status=${filter}` : ""}`),
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
                <tr
                  key={t.request_id}
                  data-request={t.request_id}
                  data-status={t.status}
                  data-waiting={t.waiting ? "" : undefined}
                  class={t.waiting ? "waiting" : undefined}
                >
                  <td>
                    <When ms={t.started_at} />
                  </td>
                  <td class="long">
                    {/* Named by its question, with the channel it came from; the id is on hover. */}
                    {t.session_key !== undefined && <ChannelIcon channel={channelOf(t.session_key)} />}{" "}
                    <a
                      class="trace-open turn-q"
                      href={`#/traces/${encodeURIComponent(t.request_id)}`}
                      title={`request ${t.request_id}`}
                    >
                      {t.question ?? <code>{t.request_id.slice(0, 8)}</code>}
                    </a>
                    <div class="muted">
                      {t.agent_id ?? "?"}
                      {t.models.length > 0 && ` · ${t.models.join(", ")}`}
                      {t.session_key !== undefined && ` · ${channelLabel(channelOf(t.session_key))}`}
                    </div>
                    {t.error && <div class="error">{t.error}</div>}
                  </td>
                  <td>
                    <Badge state={turnState(t)} />
                  </td>
                  <td class="num">{fmtDur(t.duration_ms)}</td>
                  <td
                    class="num"
                    title={`${t.model_calls} model, ${t.tool_calls} tool, ${t.turns} turn(s)${t.retries ? `; ${t.retries} model call(s) failed upstream and were retried` : ""}`}
                  >
                    {t.model_calls} + {t.tool_calls}
                    {!!t.retries && (
                      <span class="retries" data-retries={t.retries}>
                        ↻ {t.retries} {t.retries === 1 ? "retry" : "retries"}
                      </span>
                    )}
                  </td>
                  <td class="num">{fmtInt(t.tokens)}</td>
                  <td
                    class="num"
                    title={
                      t.unpriced_calls > 0
                        ? estimateTitle(t.unpriced_calls) + (t.cost > 0 ? `; ${fmtCost(t.cost)} priced` : "")
                        : undefined
                    }
                  >
                    {costText(t)}
                  </td>
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
          Calls are model + tool calls; ↻ counts model calls retried after an upstream error. ≈ is an estimate
          at budgets.default_price for a model without a price. A request id from a log line or `familiar chat
          --verbose` opens below.
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
