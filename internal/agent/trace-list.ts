/**
 * Recent turns for the console's trace list (`GET /api/traces`): each user message's root turn with
 * its duration, model and tool calls, tokens, cost (the ledger's figure each model call's trace point
 * carries; an older point without one is priced by the ledger's rule),
 * status and, for a failed turn, the stored cause. Sorted newest, slowest or costliest; filterable to
 * failed turns, an agent or a session.
 *
 * Bounded: only the last {@link WINDOW} root turns are considered, so a sort by cost or duration
 * reads at most that many trees' model rows, however old the database is.
 */
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import { costWithDefault } from "../budgets/spend.js";
import { ESTIMATED_SOURCES, priceCall, type CostSource } from "../models/call-cost.js";
import { flushTraces } from "./trace.js";

/** How many recent root turns a list is drawn from. */
export const WINDOW = 500;

export type TraceSort = "newest" | "slowest" | "costliest";

export interface TraceListItem {
  request_id: string;
  agent_id: string | null;
  session_id: string | null;
  status: string;
  started_at: number;
  ended_at: number | null;
  /** null while the turn still runs. */
  duration_ms: number | null;
  model_calls: number;
  tool_calls: number;
  /** Turns of the tree (1 + delegated sub-turns). */
  turns: number;
  tokens: number;
  /** USD: the ledger's figure of every model call of the tree. */
  cost: number;
  /** Calls whose figure is an estimate (no price, or counts estimated from the text). */
  unpriced_calls: number;
  models: string[];
  /** The stored cause of a failed turn (the answer's text), if any. */
  error: string | null;
  /**
   * `cost` with the unpriced calls counted at `budgets.default_price`, as the budgets count them (the
   * console shows it as `≈$…` beside "unpriced"); equal to `cost` when every call had a price.
   */
  estimated_cost: number;
  /** Model attempts that failed upstream and were retried or fell back (`retry` spans). */
  retries: number;
  /** A running turn whose tool call waits for the owner's approval (an open `approval` span). */
  waiting: boolean;
  /** The session's key (its channel is the key's third part), or null for a turn without a session. */
  session_key: string | null;
  /** What the turn answered: the user's message that started it (whitespace folded, 160 chars). */
  question: string | null;
}

export interface TraceListQuery {
  sort: TraceSort;
  status?: "failed" | "ok" | "running" | undefined;
  agent?: string | undefined;
  session?: string | undefined;
  limit: number;
}

interface RootRow {
  request_id: string;
  agent_id: string | null;
  session_id: string | null;
  status: string;
  started_at: number;
  ended_at: number | null;
}
interface CallRow {
  root_request_id: string;
  kind: string;
  name: string;
  meta: string | null;
  ended_at: number | null;
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** Lists recent turns; an empty list when the database has no trace table yet. */
export function listTraces(db: Db, config: Config, q: TraceListQuery): TraceListItem[] {
  const hasTable =
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'traces'").get() !== undefined;
  if (!hasTable) return [];
  flushTraces(db);
  const roots = db
    .prepare<[string | null, string | null, string | null, string | null, number], RootRow>(
      `SELECT request_id, agent_id, session_id, status, started_at, ended_at FROM traces
       WHERE kind = 'turn' AND depth = 0
         AND (? IS NULL OR agent_id = ?) AND (? IS NULL OR session_id = ?)
       ORDER BY id DESC LIMIT ?`,
    )
    .all(q.agent ?? null, q.agent ?? null, q.session ?? null, q.session ?? null, WINDOW);
  if (roots.length === 0) return [];
  const items = new Map<string, TraceListItem>();
  for (const r of roots)
    items.set(r.request_id, {
      ...r,
      duration_ms: r.ended_at != null ? r.ended_at - r.started_at : null,
      model_calls: 0,
      tool_calls: 0,
      turns: 0,
      tokens: 0,
      cost: 0,
      unpriced_calls: 0,
      models: [],
      error: null,
      estimated_cost: 0,
      retries: 0,
      waiting: false,
      session_key: null,
      question: null,
    });
  // Through the traces_root index: only the rows of these trees are read.
  const calls = db
    .prepare<[string], CallRow>(
      `SELECT root_request_id, kind, name, meta, ended_at FROM traces
       WHERE root_request_id IN (SELECT value FROM json_each(?))
         AND kind IN ('turn','model','tool','retry','approval')`,
    )
    .all(JSON.stringify(roots.map((r) => r.request_id)));
  for (const c of calls) {
    const it = items.get(c.root_request_id);
    if (!it) continue;
    if (c.kind === "turn") it.turns++;
    else if (c.kind === "tool") it.tool_calls++;
    else if (c.kind === "retry") it.retries++;
    else if (c.kind === "approval") it.waiting ||= c.ended_at == null;
    else {
      it.model_calls++;
      let u = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 0 };
      let stored: { cost: number; source: CostSource } | undefined;
      try {
        const m = JSON.parse(c.meta ?? "{}") as Record<string, unknown>;
        if (typeof m.cost === "number" && typeof m.costSource === "string")
          stored = { cost: m.cost, source: m.costSource as CostSource };
        u = {
          input: num(m.input),
          output: num(m.output),
          cacheRead: num(m.cacheRead),
          cacheWrite: num(m.cacheWrite),
          reasoning: num(m.reasoning),
          total: num(m.total) || num(m.input) + num(m.output),
        };
      } catch {
        /* a damaged meta counts as zero tokens, never as an error of the whole list */
      }
      it.tokens += u.total;
      const slash = c.name.indexOf("/");
      const provider = slash > 0 ? c.name.slice(0, slash) : c.name;
      // The ledger's figure, as the SSE `done`, the headers and the trace detail show it.
      const cost = stored?.cost ?? costWithDefault(config, provider, c.name.slice(slash + 1), u);
      const estimated = stored
        ? ESTIMATED_SOURCES.includes(stored.source)
        : cost > 0 && !priced(config, c.name);
      if (estimated) it.unpriced_calls++;
      it.cost += cost;
      it.estimated_cost += cost;
      if (!it.models.includes(c.name)) it.models.push(c.name);
    }
  }
  let list = [...items.values()];
  if (q.status === "failed") list = list.filter((i) => i.status === "error" || i.status === "aborted");
  else if (q.status === "ok") list = list.filter((i) => i.status === "ok");
  else if (q.status === "running") list = list.filter((i) => i.ended_at == null);
  if (list.some((i) => i.status !== "ok")) {
    // Through the messages_session index (request_id has none).
    const errs = db.prepare<[string, string], { content: string }>(
      `SELECT content FROM messages WHERE session_id = ? AND request_id = ? AND role = 'assistant'
         AND status = 'error' ORDER BY id DESC LIMIT 1`,
    );
    for (const i of list)
      if (i.status === "error" && i.session_id)
        i.error = errs.get(i.session_id, i.request_id)?.content || null;
  }
  if (q.sort === "slowest") list.sort((a, b) => (b.duration_ms ?? -1) - (a.duration_ms ?? -1));
  else if (q.sort === "costliest") list.sort((a, b) => b.cost - a.cost || b.tokens - a.tokens);
  const page = list.slice(0, q.limit);
  nameTurns(db, page);
  return page;
}

/**
 * Each listed turn's session key and question: the user message that started it, i.e. the last user
 * message before the turn's first stored message (or the last one yet, while it runs). Only the page
 * is looked up, through the messages_session index.
 */
function nameTurns(db: Db, page: TraceListItem[]): void {
  const key = db.prepare<[string], { key: string }>("SELECT key FROM sessions WHERE id = ?");
  const question = db.prepare<[string, string, string], { content: string }>(
    `SELECT content FROM messages WHERE session_id = ? AND role = 'user'
       AND id < COALESCE((SELECT MIN(id) FROM messages WHERE session_id = ? AND request_id = ? AND role != 'user'),
                         9007199254740991)
     ORDER BY id DESC LIMIT 1`,
  );
  for (const i of page) {
    if (!i.session_id) continue;
    i.session_key = key.get(i.session_id)?.key ?? null;
    const text = question.get(i.session_id, i.session_id, i.request_id)?.content.replace(/\s+/g, " ").trim();
    i.question = text ? (text.length > 160 ? `${text.slice(0, 159)}…` : text) : null;
  }
}

/** True when a `<provider>/<model>` has a price (config or shipped), or is the free echo model. */
function priced(config: Config, name: string): boolean {
  const slash = name.indexOf("/");
  if (slash <= 0) return false;
  return (
    priceCall(config, {
      provider: name.slice(0, slash),
      model: name.slice(slash + 1),
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 0 },
    }).source !== "default"
  );
}
