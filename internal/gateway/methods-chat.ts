/**
 * Websocket methods for chat and sessions: chat.send / chat.abort / chat.history and
 * sessions.list / reset / compact / delete.
 *
 * Over 300 lines on purpose: chat.send's idempotency, waiting and streaming belong together; the
 * other chat methods are short.
 */
import type { TurnResult } from "../core/host.js";
import { parseSessionKey } from "../session/keys.js";
import type { StoredMessage } from "../session/session-store.js";
import {
  IdempotencyCache,
  PersistedIdempotency,
  scopedIdempotencyKey,
  type PersistedSend,
} from "./idempotency.js";
import { SessionKeyError, type Destination, type FrontDeskPort, type Routed } from "../inbound/front-desk.js";
import { sessionKeyFor } from "../inbound/session-spec.js";
import { MethodError, type Params } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";
import { connTarget } from "./conn-target.js";
import type { MethodHandler } from "./ws-server.js";
import { runGatewayCommand, type CommandAnswer } from "./chat-command.js";
import { publicTurnMessage } from "./turn-error-public.js";

interface SendEntry {
  runId: string;
  sessionKey: string;
  result: Promise<TurnResult>;
}

/**
 * A session's title for lists: the one set (`meta.title`, PATCH over REST), else the start of its
 * first user message, so a chat reads "plan the trip to Lyon" rather than its key.
 */
export function titleOf(rt: GatewayRuntime, r: { id: string; meta: string | null }): { title?: string } {
  try {
    const set = r.meta ? (JSON.parse(r.meta) as { title?: unknown }).title : undefined;
    if (typeof set === "string" && set.trim()) return { title: set.trim() };
  } catch {
    /* meta is not JSON: fall through to the first message */
  }
  const first = rt.ctx.db
    .prepare<[string], { content: string }>(
      "SELECT content FROM messages WHERE session_id = ? AND role = 'user' ORDER BY id LIMIT 1",
    )
    .get(r.id);
  const text = first?.content.replace(/\s+/g, " ").trim();
  if (!text) return {};
  return { title: text.length > 60 ? `${text.slice(0, 59)}…` : text };
}

/** A session name that cannot be part of a key, as the `sessionKey` param's error. */
export function asSessionKeyParamError(err: unknown): unknown {
  return err instanceof SessionKeyError
    ? new MethodError("invalid_params", `params.sessionKey: ${err.message}`)
    : err;
}

/** Routes at the front desk; a session name that cannot be a key is the `sessionKey` param's error. */
export function routeSessionParam(desk: FrontDeskPort, d: Destination): Routed {
  try {
    return desk.route(d);
  } catch (err) {
    throw asSessionKeyParamError(err);
  }
}

/** Resolves a `sessionKey` param: a full key as is, a bare name as `agent:<agent>:gateway:<name>`. */
export function resolveSessionKey(raw: string, agentId: string): string {
  try {
    return sessionKeyFor({ named: raw }, agentId, "gateway");
  } catch (err) {
    throw asSessionKeyParamError(err);
  }
}

/**
 * The compact result clients get for a finished turn. A failure's words leave without the
 * provider's address (core/public-text.ts): a websocket client is an API client too.
 */
export function summarizeResult(r: TurnResult): Record<string, unknown> {
  return {
    runId: r.runId,
    text: r.finishReason === "error" ? publicTurnMessage(r.text) : r.text,
    finishReason: r.finishReason,
    usage: r.treeUsage,
    cost: r.treeCost,
    ...(r.treeCostEstimatedCalls ? { costEstimatedCalls: r.treeCostEstimatedCalls } : {}),
    ...(r.model ? { model: r.model } : {}),
    ...(r.error ? { error: { ...r.error, message: publicTurnMessage(r.error.message) } } : {}),
  };
}

function historyEntry(m: StoredMessage): Record<string, unknown> {
  return {
    id: m.id,
    role: m.role,
    content: m.content,
    status: m.status,
    createdAt: m.created_at,
    ...(m.tool_name ? { toolName: m.tool_name } : {}),
    ...(m.tool_calls ? { toolCalls: safeJson(m.tool_calls) } : {}),
    ...(m.model ? { model: m.model } : {}),
    ...(m.tool_call_id ? { toolCallId: m.tool_call_id } : {}),
    ...(m.request_id ? { requestId: m.request_id } : {}),
  };
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

export function chatMethods(rt: GatewayRuntime): [string, MethodHandler][] {
  const idem = new IdempotencyCache<SendEntry>(() => rt.ctx.clock.now());
  const persisted = new PersistedIdempotency(rt.ctx.db, () => rt.ctx.clock.now());
  /** Slash-command answers by scoped key: a client retrying after a dropped socket must not run `/new` twice. */
  const commandAnswers = new IdempotencyCache<Promise<CommandAnswer>>(() => rt.ctx.clock.now());
  /** Disk is best effort here: a full disk must not refuse the message itself. */
  const persist = (sessionKey: string, key: string, entry: PersistedSend): void => {
    try {
      persisted.save(sessionKey, key, entry);
    } catch (err) {
      rt.ctx.logger.warn({ err: (err as Error).message }, "chat.send: could not persist an idempotency key");
    }
  };

  /** The `/agent` choice scope of a gateway session name (or full key). */
  const scopeOf = (raw: string): string => `gateway:${raw}`;

  /**
   * A key persisted without a result belongs to a turn a crash cut off; the host resumes such turns at
   * start under the same request id, so once its final answer is stored, that is the result.
   */
  const withStoredAnswer = (e: PersistedSend | undefined): PersistedSend | undefined => {
    if (!e || e.result || !e.requestId) return e;
    const head = rt.sessions.head(e.sessionKey);
    const final = head
      ? rt.sessions
          .messages(head.id)
          .findLast((m) => m.role === "assistant" && m.request_id === e.requestId && !m.tool_calls)
      : undefined;
    if (!final || final.status !== "ok") return e;
    return {
      ...e,
      result: { runId: e.runId, text: final.content, finishReason: final.finish_reason ?? "stop" },
    };
  };

  /**
   * Where a `chat.send` goes, through the front desk: the `agent` param (which must exist) > the
   * `/agent` choice of this session name > `routing` (channel "gateway", chat = the session name) >
   * agents.default; a full session key is used as is (with the default agent). An unknown default
   * still reaches the host: the echo agent answers.
   */
  const destination = (p: Params): Routed => {
    const desk = rt.frontDesk();
    const explicit = p.optStr("agent");
    if (explicit !== undefined && !desk.findAgent(explicit))
      throw new MethodError("not_found", `unknown agent "${explicit}"`);
    const raw = p.str("sessionKey");
    const d: Destination = {
      channel: "gateway",
      ...(explicit !== undefined ? { agentId: explicit } : {}),
      ...(raw.includes(":") ? {} : { from: { chatId: raw, scope: scopeOf(raw) } }),
      session: { named: raw },
    };
    return routeSessionParam(desk, d);
  };

  const keyParam = (p: Params, agentId?: string): string =>
    resolveSessionKey(p.str("sessionKey"), agentId ?? rt.ctx.config().agents.default);

  const send: MethodHandler = async (p, conn) => {
    const desk = rt.frontDesk();
    const { agentId, sessionKey } = destination(p);
    // This connection now shows this session: a reminder asked here comes back to it.
    rt.watchers.see(conn, sessionKey);
    const message = p.str("message");
    const idemKey = p.optStr("idempotencyKey");
    const wait = p.optBool("wait") ?? false;
    const kind = parseSessionKey(sessionKey).kind;
    if (kind !== "gateway" && !rt.ctx.config().gateway.allow_channel_writes)
      throw new MethodError(
        "forbidden",
        `session ${sessionKey} belongs to another channel; set gateway.allow_channel_writes to write to it`,
      );
    const cmd = desk.parseCommand(message);
    if (cmd) {
      const scoped = idemKey ? scopedIdempotencyKey(sessionKey, idemKey) : undefined;
      // In memory (also while the first one runs), then on disk (a retry after a restart).
      const seen = scoped ? commandAnswers.get(scoped) : undefined;
      if (seen) return { ...(await seen), duplicate: true };
      const stored = idemKey ? persisted.load(sessionKey, idemKey) : undefined;
      if (stored?.result)
        return {
          runId: stored.runId,
          sessionKey,
          status: "done",
          ...(stored.command ? { command: stored.command } : {}),
          result: stored.result,
          duplicate: true,
        };
      const answer = runGatewayCommand(rt, cmd, {
        sessionKey,
        agentId,
        scope: scopeOf(p.str("sessionKey")),
        chatId: p.str("sessionKey"),
        conn,
      });
      if (scoped) commandAnswers.set(scoped, answer);
      const done = await answer.catch((err: unknown) => {
        if (scoped) commandAnswers.delete(scoped);
        throw err;
      });
      if (idemKey)
        persist(sessionKey, idemKey, {
          runId: done.runId,
          sessionKey,
          command: cmd.name,
          result: done.result,
        });
      return done;
    }
    // Keys are per session: the same key in another session is a new message.
    const cached = idemKey ? idem.get(scopedIdempotencyKey(sessionKey, idemKey)) : undefined;
    if (cached) {
      if (wait)
        return {
          runId: cached.runId,
          sessionKey: cached.sessionKey,
          duplicate: true,
          status: "done",
          result: summarizeResult(await cached.result),
        };
      return { runId: cached.runId, sessionKey: cached.sessionKey, duplicate: true, status: "started" };
    }
    // Not in memory: maybe sent before a restart. A finished run answers with its result; one that was
    // cut off by a crash is resumed by the host at start, so it must not run again either.
    const before = idemKey ? withStoredAnswer(persisted.load(sessionKey, idemKey)) : undefined;
    if (before)
      return before.result
        ? {
            runId: before.runId,
            sessionKey: before.sessionKey,
            duplicate: true,
            status: "done",
            result: before.result,
          }
        : { runId: before.runId, sessionKey: before.sessionKey, duplicate: true, status: "started" };
    const handle = desk.admit({
      channel: "gateway",
      agentId,
      session: { key: sessionKey },
      text: message,
      sender: { id: `gateway:${conn.clientName}`, name: conn.clientName },
      originLabel: `gateway client "${conn.clientName}"`,
      // An approval this turn needs is asked on this connection (the `approval.request` event), and
      // only this connection or the owner can settle it.
      approvalTarget: connTarget(conn),
      // The key is committed with the user message (one transaction): no kill -9 can keep the message
      // and lose the key, which would make the client's retry a second turn.
      ...(idemKey ? { onAccepted: (ids) => persist(sessionKey, idemKey, { ...ids, sessionKey }) } : {}),
    });
    const entry: SendEntry = { runId: handle.runId, sessionKey, result: handle.result };
    if (idemKey) {
      const key = idemKey;
      idem.set(scopedIdempotencyKey(sessionKey, key), entry);
      const base = { runId: handle.runId, requestId: handle.requestId, sessionKey };
      void handle.result.then(
        (r) => persist(sessionKey, key, { ...base, result: summarizeResult(r) }),
        () => undefined,
      );
    }
    // requestId: what `familiar trace` and GET /api/traces/{id} take (shown by `familiar chat --verbose`).
    if (wait)
      return {
        runId: handle.runId,
        requestId: handle.requestId,
        sessionKey,
        status: "done",
        result: summarizeResult(await handle.result),
      };
    return { runId: handle.runId, requestId: handle.requestId, sessionKey, status: "started" };
  };

  const abort: MethodHandler = (p) => {
    const sessionKey = keyParam(p, p.optStr("agent"));
    return { sessionKey, aborted: rt.host().abort(sessionKey) };
  };

  const history: MethodHandler = (p, conn) => {
    const sessionKey = keyParam(p, p.optStr("agent"));
    rt.watchers.see(conn, sessionKey);
    const limit = p.optInt("limit", 1, 1000) ?? 200;
    const head = rt.sessions.head(sessionKey);
    if (!head) return { sessionKey, sessionId: null, messages: [] };
    const all = rt.sessions.messages(head.id);
    const shown = all.filter(
      (m) =>
        m.role === "user" ||
        m.role === "assistant" ||
        m.role === "tool" ||
        m.role === "event" ||
        // A compacted session starts with its summary: show it so the client knows what came before.
        (m.role === "system" && m.status === "summary"),
    );
    const page = shown.slice(-limit).map(historyEntry);
    // A reply keeps its token count after a reload: the usage of its request, on its last answer.
    const ids = [...new Set(page.map((m) => m.requestId).filter((x): x is string => typeof x === "string"))];
    if (ids.length > 0) {
      const totals = new Map(
        rt.ctx.db
          .prepare<[string], { request_id: string; total: number }>(
            `SELECT request_id, SUM(total) AS total FROM usage
             WHERE request_id IN (SELECT value FROM json_each(?)) GROUP BY request_id`,
          )
          .all(JSON.stringify(ids))
          .map((r) => [r.request_id, r.total] as const),
      );
      const seen = new Set<string>();
      for (let i = page.length - 1; i >= 0; i--) {
        const m = page[i]!;
        const id = m.requestId;
        if (m.role !== "assistant" || typeof id !== "string" || seen.has(id)) continue;
        seen.add(id);
        const total = totals.get(id);
        if (total) m.tokens = total;
      }
    }
    return { sessionKey, sessionId: head.id, agentId: head.agent_id, messages: page };
  };

  const list: MethodHandler = (p) => {
    const rows = rt.sessions.list(p.optStr("prefix") ?? "", p.optInt("limit", 1, 1000) ?? 100);
    return {
      sessions: rows.map((r) => ({
        sessionKey: r.key,
        ...titleOf(rt, r),
        sessionId: r.id,
        agentId: r.agent_id,
        messageCount: r.message_count,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
        ...(r.model_override ? { modelOverride: r.model_override } : {}),
      })),
    };
  };

  const reset: MethodHandler = (p) => {
    const sessionKey = keyParam(p, p.optStr("agent"));
    const out = rt.host().reset(sessionKey, p.optStr("reason") ?? "reset");
    return { sessionKey, sessionId: out.sessionId };
  };

  const compact: MethodHandler = async (p) => {
    const sessionKey = keyParam(p, p.optStr("agent"));
    try {
      return { sessionKey, ...(await rt.host().compact(sessionKey, p.optStr("instructions"))) };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "COMPACTION_UNAVAILABLE") throw new MethodError("unavailable", (err as Error).message);
      if (code === "SESSION_NOT_FOUND") throw new MethodError("not_found", (err as Error).message);
      // As REST answers them (409): nothing to compact, compaction off, busy, archived.
      if (
        code === "NOTHING_TO_COMPACT" ||
        code === "COMPACTION_OFF" ||
        code === "COMPACTION_BUSY" ||
        code === "SESSION_ARCHIVED"
      )
        throw new MethodError("conflict", `${code.toLowerCase()}: ${(err as Error).message}`);
      if (code === "COMPACT_BAD_OPTION") throw new MethodError("invalid_params", (err as Error).message);
      throw err;
    }
  };

  const del: MethodHandler = (p) => {
    const sessionKey = keyParam(p, p.optStr("agent"));
    const head = rt.sessions.head(sessionKey);
    if (!head) throw new MethodError("not_found", `no session for ${sessionKey}`);
    rt.maybeHost()?.abort(sessionKey);
    rt.sessions.delete(head.id);
    rt.ctx.bus.emit("session.changed", { sessionKey, sessionId: head.id, reason: "deleted" });
    return { sessionKey, sessionId: head.id, deleted: true };
  };

  return [
    ["chat.send", send],
    ["chat.abort", abort],
    ["chat.history", history],
    ["sessions.list", list],
    ["sessions.reset", reset],
    ["sessions.compact", compact],
    ["sessions.delete", del],
  ];
}
