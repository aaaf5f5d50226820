/**
 * The JSON shapes of the `/api` surface (snake_case, like the request bodies): agents, sessions,
 * stored messages and the usage block of a turn. One place, so every route answers alike.
 */
import type { Config } from "../../config/schema.js";
import type { AgentDef } from "../../agent/agents.js";
import type { TurnResult } from "../../core/host.js";
import type { Usage } from "../../models/types.js";
import { parseSessionKey } from "../../session/keys.js";
import type { SessionRow, StoredMessage } from "../../session/session-store.js";
import { resolveCompactionSettings } from "../../agent/compaction/compaction-settings.js";
import type { Lineage, LineageEntry } from "../../agent/compaction/lineage.js";

/** Where an agent is defined: `config`, `file` (with `path`), `api` or `builtin`. */
export function agentJson(a: AgentDef): Record<string, unknown> {
  const { id, source, ...def } = a;
  const file = source.startsWith("file:");
  return {
    id,
    source: file ? "file" : source,
    ...(file ? { path: source.slice(5) } : {}),
    editable: source === "api",
    ...def,
  };
}

/** The channel a session key belongs to (`gateway`, `telegram`, `discord`, `cron`, `heartbeat`...). */
export function channelOfKey(key: string): string {
  const p = parseSessionKey(key);
  switch (p.kind) {
    case "gateway":
      return "gateway";
    case "dm":
    case "group":
      return p.channel;
    case "cron":
      return "cron";
    case "heartbeat":
      return "heartbeat";
    default:
      return "other";
  }
}

/** A session's free-form metadata (the `meta` column); a copy the caller may change. */
export function sessionMeta(s: SessionRow): Record<string, unknown> {
  if (!s.meta) return {};
  try {
    const v = JSON.parse(s.meta) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? { ...(v as Record<string, unknown>) } : {};
  } catch {
    return {};
  }
}

export function sessionJson(
  cfg: Config,
  s: SessionRow,
  messageCount: number,
  writable: boolean,
): Record<string, unknown> {
  const c = resolveCompactionSettings(cfg, s.agent_id, s);
  const title = sessionMeta(s).title;
  return {
    id: s.id,
    agent_id: s.agent_id,
    title: typeof title === "string" ? title : null,
    key: s.key,
    channel: channelOfKey(s.key),
    writable,
    archived: s.archived_at !== null,
    created_at: s.created_at,
    updated_at: s.updated_at,
    archived_at: s.archived_at,
    parent_id: s.parent_id,
    successor_id: s.successor_id,
    reset_reason: s.reset_reason,
    model_override: s.model_override,
    message_count: messageCount,
    compaction: {
      strategy: c.strategy,
      keep_last_n: c.keepLastN,
      observation_mask: c.observationMask,
      summary_model: c.summaryModel ?? null,
    },
  };
}

function parseJson(s: string | null): unknown {
  if (s === null) return null;
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}

export function messageJson(m: StoredMessage): Record<string, unknown> {
  return {
    id: m.id,
    session_id: m.session_id,
    role: m.role,
    content: m.content,
    ...(m.parts !== null ? { parts: parseJson(m.parts) } : {}),
    ...(m.tool_calls !== null ? { tool_calls: parseJson(m.tool_calls) } : {}),
    ...(m.tool_call_id !== null ? { tool_call_id: m.tool_call_id } : {}),
    ...(m.tool_name !== null ? { tool_name: m.tool_name } : {}),
    model: m.model,
    finish_reason: m.finish_reason,
    status: m.status,
    // The same snake_case usage block as the turn totals (the store keeps the core's camelCase).
    ...(m.usage !== null ? { usage: storedUsageJson(parseJson(m.usage)) } : {}),
    request_id: m.request_id,
    created_at: m.created_at,
  };
}

export function usageJson(u: Usage): Record<string, number> {
  return {
    input: u.input,
    output: u.output,
    cache_read: u.cacheRead,
    cache_write: u.cacheWrite,
    reasoning: u.reasoning,
    total: u.total || u.input + u.output,
  };
}

/** A stored usage object in the API's shape; anything unexpected is passed through as it is. */
function storedUsageJson(u: unknown): unknown {
  if (typeof u !== "object" || u === null || !("input" in u)) return u;
  const x = u as Partial<Usage>;
  return usageJson({
    input: Number(x.input ?? 0),
    output: Number(x.output ?? 0),
    cacheRead: Number(x.cacheRead ?? 0),
    cacheWrite: Number(x.cacheWrite ?? 0),
    reasoning: Number(x.reasoning ?? 0),
    total: Number(x.total ?? 0),
  });
}

/** The call-tree totals of a turn: usage and cost summed over every sub-call, and their number. */
export function turnTotalsJson(r: TurnResult): Record<string, unknown> {
  return {
    request_id: r.requestId,
    usage: usageJson(r.treeUsage),
    cost: r.treeCost,
    cost_estimated_calls: r.treeCostEstimatedCalls ?? 0,
    sub_calls: r.subCalls,
  };
}

function lineageEntryJson(e: LineageEntry): Record<string, unknown> {
  return {
    id: e.id,
    key: e.key,
    agent_id: e.agentId,
    created_at: e.createdAt,
    archived_at: e.archivedAt,
    parent_id: e.parentId,
    successor_id: e.successorId,
    message_count: e.messageCount,
  };
}

/** A session's compaction lineage: ancestors and successors nearest first, summaries oldest first. */
export function lineageJson(l: Lineage): Record<string, unknown> {
  return {
    session: lineageEntryJson(l.session),
    backward: l.backward.map(lineageEntryJson),
    forward: l.forward.map(lineageEntryJson),
    summaries: l.summaries.map((s) => ({
      id: s.id,
      source_session_id: s.sourceSessionId,
      successor_session_id: s.successorSessionId,
      summary: s.summary,
      level: s.level,
      tokens_before: s.tokensBefore,
      tokens_after: s.tokensAfter,
      messages_summarised: s.messagesSummarised,
      instructions: s.instructions,
      created_at: s.createdAt,
    })),
  };
}
