/**
 * The call tree of one user message as a report (`GET /api/traces/{id}`, `familiar trace`): every
 * turn, model call and tool call with its request id, parent, depth, usage and cost, plus totals.
 *
 * Tree shape: a turn's `parent_request_id` is the request that delegated it (null for the root); a
 * model or tool call's `parent_request_id` is the turn that made it. `sub_calls` counts model and tool
 * calls over the whole tree, the same count a turn reports in `X-Familiar-Usage-Subcalls`.
 */
import type { Config } from "../config/schema.js";
import { ZERO_USAGE, type Usage } from "../models/types.js";
import type { Db } from "../store/db.js";
import { priceCall, ESTIMATED_SOURCES, type CostSource } from "../models/call-cost.js";
import { estimateReason, formatUsd } from "../core/money.js";
import { addUsage } from "../core/usage.js";
import { TraceRecorder, type TraceRow } from "./trace.js";

export type { TraceCall, TraceReport, TraceRequest } from "./trace-wire.js";
import type { TraceCall, TraceReport, TraceRequest } from "./trace-wire.js";

function usageOf(meta: string | null): Usage {
  if (!meta) return { ...ZERO_USAGE };
  try {
    const u = JSON.parse(meta) as Partial<Usage>;
    const n = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
    const input = n(u.input);
    const output = n(u.output);
    return {
      input,
      output,
      cacheRead: n(u.cacheRead),
      cacheWrite: n(u.cacheWrite),
      reasoning: n(u.reasoning),
      total: n(u.total) || input + output,
    };
  } catch {
    return { ...ZERO_USAGE };
  }
}

/** The ledger figure a model call's trace point carries (written since the ledger's figure). */
function storedCost(meta: string | null): { cost: number; source: CostSource } | undefined {
  if (!meta) return undefined;
  try {
    const m = JSON.parse(meta) as Record<string, unknown>;
    return typeof m.cost === "number" && typeof m.costSource === "string"
      ? { cost: m.cost, source: m.costSource as CostSource }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Kinds whose meta is shown as `detail`: containment, approval waits, retries, compactions. */
const DETAILED = new Set(["taint", "approval", "retry", "compaction"]);

/** The breakdown and retry marks a model call's meta may carry (absent on older rows). */
function extrasOf(meta: string | null): Partial<TraceCall> {
  if (!meta) return {};
  try {
    const m = JSON.parse(meta) as Record<string, unknown>;
    const out: Partial<TraceCall> = {};
    const p = m.prompt as Record<string, unknown> | undefined;
    if (p && typeof p === "object") {
      const n = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : 0);
      out.prompt = {
        system: n(p.system),
        tools: n(p.tools),
        history: n(p.history),
        tool_results: n(p.tool_results),
        new_message: n(p.new_message),
      };
    }
    if (typeof m.overflowRetries === "number") out.overflow_retries = m.overflowRetries;
    if (m.compacted === true) out.compacted = true;
    return out;
  } catch {
    return {};
  }
}

/**
 * Builds the report from stored trace rows; undefined when no record has that request id. A model
 * call without a price counts at `budgets.default_price`, as the budgets count it, and is marked
 * `estimated`.
 */
export function buildTraceReport(
  rows: readonly TraceRow[],
  requestId: string,
  config: Config,
): TraceReport | undefined {
  if (rows.length === 0 || !rows.some((r) => r.request_id === requestId)) return undefined;
  const requests = new Map<string, TraceRequest>();
  for (const r of rows)
    if (r.kind === "turn" && !requests.has(r.request_id))
      requests.set(r.request_id, {
        request_id: r.request_id,
        parent_request_id: r.parent_request_id,
        depth: r.depth,
        agent_id: r.agent_id,
        session_id: r.session_id,
        status: r.status,
        model_calls: 0,
        tool_calls: 0,
        usage: { ...ZERO_USAGE },
        cost: 0,
      });
  let total: Usage = { ...ZERO_USAGE };
  let cost = 0;
  let unpriced = 0;
  let models = 0;
  let tools = 0;
  let maxDepth = 0;
  const calls: TraceCall[] = rows.map((r) => {
    maxDepth = Math.max(maxDepth, r.depth);
    const owner = requests.get(r.request_id);
    const call: TraceCall = {
      id: r.id,
      kind: r.kind,
      name: r.name,
      request_id: r.request_id,
      parent_request_id: r.kind === "turn" ? r.parent_request_id : r.request_id,
      depth: r.depth,
      agent_id: r.agent_id ?? owner?.agent_id ?? null,
      session_id: r.session_id ?? owner?.session_id ?? null,
      status: r.status,
      started_at: r.started_at,
      ended_at: r.ended_at,
    };
    if (r.kind === "model") {
      models++;
      const u = usageOf(r.meta);
      const slash = r.name.indexOf("/");
      const provider = slash > 0 ? r.name.slice(0, slash) : r.name;
      const model = slash > 0 ? r.name.slice(slash + 1) : "";
      // The ledger's figure the point carries (every surface shows it); an older point is priced by
      // the ledger's rule from its counts.
      const figure = storedCost(r.meta) ?? priceCall(config, { provider, model, usage: u });
      const c = figure.cost;
      call.usage = u;
      call.cost = c;
      Object.assign(call, extrasOf(r.meta));
      if (ESTIMATED_SOURCES.includes(figure.source)) {
        call.estimated = true;
        unpriced++;
      }
      total = addUsage(total, u);
      cost += c;
      if (owner) {
        owner.model_calls++;
        owner.usage = addUsage(owner.usage, u);
        owner.cost += c;
      }
    } else if (r.kind === "tool") {
      tools++;
      if (owner) owner.tool_calls++;
    } else if (DETAILED.has(r.kind) && r.meta) {
      try {
        const d: unknown = JSON.parse(r.meta);
        if (d && typeof d === "object" && !Array.isArray(d)) call.detail = d as Record<string, unknown>;
      } catch {
        /* a damaged record still lists */
      }
    }
    return call;
  });
  return {
    request_id: requestId,
    root_request_id: rows[0]?.root_request_id ?? requestId,
    calls,
    requests: [...requests.values()],
    totals: {
      usage: total,
      cost,
      unpriced_calls: unpriced,
      default_price: {
        input: config.budgets.default_price.input,
        output: config.budgets.default_price.output,
      },
      sub_calls: models + tools,
      model_calls: models,
      tool_calls: tools,
      requests: requests.size,
      max_depth: maxDepth,
    },
  };
}

/** Reads the tree of `requestId` from a database (read-only is fine) and builds its report. */
export function readTraceReport(db: Db, requestId: string, config: Config): TraceReport | undefined {
  const hasTable =
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'traces'").get() !== undefined;
  if (!hasTable) return undefined;
  const rows = new TraceRecorder(db, () => Date.now()).tree(requestId);
  return buildTraceReport(rows, requestId, config);
}

/** Renders a report for humans: one line per call, indented by depth. */
export function formatTraceReport(r: TraceReport): string {
  const usd = (c: number | null | undefined, estimated = false): string =>
    c === null || c === undefined ? "-" : formatUsd(c, estimated);
  const lines = [
    `trace ${r.root_request_id}${r.request_id !== r.root_request_id ? ` (asked: ${r.request_id})` : ""}`,
  ];
  for (const c of r.calls) {
    const pad = "  ".repeat(c.depth + (c.kind === "turn" ? 0 : 1));
    const head = `${pad}${c.kind.padEnd(5)} ${c.name}`;
    const extra =
      c.kind === "turn"
        ? ` request=${c.request_id}${c.parent_request_id ? ` parent=${c.parent_request_id}` : ""} depth=${c.depth} ${c.status}`
        : c.kind === "model" && c.usage
          ? ` in=${c.usage.input} out=${c.usage.output} cost=${usd(c.cost, c.estimated === true)}`
          : c.detail
            ? ` ${containmentDetail(c.detail)}`
            : ` ${c.status}`;
    lines.push(head + extra);
  }
  const t = r.totals;
  lines.push(
    "",
    `total: ${t.requests} turn(s), ${t.model_calls} model call(s), ${t.tool_calls} tool call(s), depth ${t.max_depth}`,
    `usage: in=${t.usage.input} out=${t.usage.output} total=${t.usage.total} cost=${usd(t.cost, t.unpriced_calls > 0)}`,
  );
  if (t.unpriced_calls > 0) lines.push(estimateReason(t.unpriced_calls, t.default_price));
  return lines.join("\n") + "\n";
}

/**
 * One line for a detailed record: the taint's sources, a sink or approval and what became of it, a
 * retried model attempt, or a compaction.
 */
function containmentDetail(d: Record<string, unknown>): string {
  const str = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v));
  if (Array.isArray(d.sources))
    return (d.sources as Record<string, unknown>[]).map((s) => `${str(s.kind)}: ${str(s.detail)}`).join("; ");
  if (d.action !== undefined)
    return `${str(d.action)} -> ${str(d.decision)}${d.grant ? ` (grant ${str(d.grant)})` : ""}`;
  if (d.summary !== undefined)
    return `${str(d.summary)} -> ${str(d.decision)}${d.reason ? ` (${str(d.reason)})` : ""}`;
  if (d.next !== undefined)
    return `${str(d.code)}: ${str(d.message)} -> ${d.next === "fallback" ? `fallback to ${str(d.fallback)}` : `retry after ${str(d.wait_ms)} ms`}`;
  if (d.trigger !== undefined) return `${str(d.messages_before)} -> ${str(d.messages_after)} messages`;
  if (d.kind !== undefined) return `${str(d.kind)}: ${str(d.detail)}`;
  return "";
}
