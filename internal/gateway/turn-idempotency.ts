/**
 * Idempotency of the turn-starting POSTs of `/v1` and `/api` (issue 34): a repeat returns the first
 * answer, or joins the first while it runs, and never stores the user message twice.
 *
 * Two ways a request is recognised as a repeat:
 * - `Idempotency-Key: <key>` (any client): the same key with the same body within a day is the
 *   same request; the same key with another body is refused (422 `idempotency_key_reused`);
 * - an SDK retry without a key: the official `openai` SDK (Node, and Stainless SDKs in general) marks
 *   every attempt with `X-Stainless-Retry-Count` (0 first, then 1, 2 ...) and resends the same body,
 *   but sends no idempotency key (its `idempotencyHeader` is declared and never set: node_modules/
 *   openai/src/client.ts). An attempt with a count of 1 or more whose body matches the caller's
 *   latest attempt in the same session is treated as that attempt's repeat.
 *
 * Invariants:
 * - the row is written in the transaction that stores the user message (`onAccepted`), so a kill -9
 *   keeps both or neither;
 * - a repeat of a turn that failed (an upstream 500) or was cut short by a crash runs the turn again
 *   on the stored user message (`resume`), never appending it again; a repeat of a turn that
 *   answered returns that answer without a model call;
 * - scope = door + the caller's token (hashed) + the session key: a key never reaches across callers
 *   or sessions;
 * - only requests that carry a key or the SDK's retry header are recorded: the plain benchmark path
 *   reads and writes nothing here.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { AgentEvent } from "../core/agent-events.js";
import type { TurnResult } from "../core/host.js";
import { ZERO_USAGE } from "../core/usage.js";
import type { FrontDeskEntry, FrontDeskPort } from "../inbound/front-desk.js";
import type { Db } from "../store/db.js";
import { HttpError } from "./http-util.js";

/** How long a key (or an SDK attempt's fingerprint) is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;

/** A turn as a door renders it: the first one's when this request was a repeat. */
export interface IdempotentHandle {
  runId: string;
  requestId: string;
  result: Promise<TurnResult>;
  abort(reason?: string): void;
  /** True when this request was answered from (or joined) an earlier one. */
  replayed: boolean;
  /** The session the turn runs (or ran) in; undefined for an ephemeral turn. */
  sessionKey?: string;
}

export interface IdempotentAdmit {
  /** The door, e.g. `/v1/chat/completions` (part of the scope). */
  door: string;
  req: IncomingMessage;
  /** The parsed request body: its canonical JSON is the fingerprint. */
  body: unknown;
  entry: FrontDeskEntry;
  onEvent?: (e: AgentEvent) => void;
  /**
   * The session part of the scope when the entry's own key is not stable across attempts (a new
   * `/v1/responses` chain gets a fresh session name per request): e.g. `chain:<previous id>`.
   */
  scopeKey?: string;
  /**
   * Completes the entry of a request that runs fresh (not a repeat): it may read the session and
   * throw an HttpError (a tool result that answers no pending call). Never called for a repeat, whose
   * input is already stored.
   */
  prepare?: (entry: FrontDeskEntry) => FrontDeskEntry;
}

interface Row {
  fingerprint: string;
  session_key: string | null;
  run_id: string;
  request_id: string;
  status: "running" | "done" | "failed";
  result: string | null;
  updated_at: number;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function sha(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

/** The `Idempotency-Key` header, validated; undefined when absent. */
export function idempotencyKeyOf(req: IncomingMessage): string | undefined {
  const raw = header(req, "idempotency-key");
  if (raw === undefined) return undefined;
  if (raw.length === 0 || raw.length > 255 || !/^[\x21-\x7e]+$/.test(raw))
    throw new HttpError(
      400,
      "invalid_idempotency_key",
      `Idempotency-Key: expected 1 to 255 visible ASCII characters, got ${JSON.stringify(raw.slice(0, 40))}${raw.length > 40 ? "..." : ""}`,
      {},
      "Idempotency-Key",
    );
  return raw;
}

/** The SDK's attempt number (`X-Stainless-Retry-Count`), or undefined when the client sends none. */
function retryCountOf(req: IncomingMessage): number | undefined {
  const raw = header(req, "x-stainless-retry-count");
  if (raw === undefined || !/^\d{1,4}$/.test(raw.trim())) return undefined;
  return Number(raw.trim());
}

/** See the module comment. One per gateway; the in-flight map is per process. */
export class TurnIdempotency {
  private running = new Map<string, { runId: string; requestId: string; result: Promise<TurnResult> }>();
  private st;
  private writes = 0;

  constructor(
    db: Db,
    private now: () => number,
  ) {
    this.st = {
      get: db.prepare<[string, string], Row>(
        "SELECT fingerprint, session_key, run_id, request_id, status, result, updated_at FROM turn_idempotency WHERE scope = ? AND key = ?",
      ),
      put: db.prepare(
        `INSERT INTO turn_idempotency (scope, key, fingerprint, session_key, run_id, request_id, status, result, created_at, updated_at)
         VALUES (@scope, @key, @fingerprint, @sessionKey, @runId, @requestId, 'running', NULL, @now, @now)
         ON CONFLICT(scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, session_key = excluded.session_key,
           run_id = excluded.run_id, request_id = excluded.request_id, status = 'running', result = NULL,
           created_at = excluded.created_at, updated_at = excluded.updated_at`,
      ),
      finish: db.prepare(
        "UPDATE turn_idempotency SET status = ?, result = ?, updated_at = ? WHERE scope = ? AND key = ? AND request_id = ?",
      ),
      prune: db.prepare("DELETE FROM turn_idempotency WHERE created_at < ?"),
      user: db.prepare<[string, string], { id: number; session_id: string }>(
        `SELECT m.id, m.session_id FROM messages m JOIN session_heads h ON h.session_id = m.session_id
          WHERE h.key = ? AND m.request_id = ? AND m.role IN ('user', 'tool') ORDER BY m.id LIMIT 1`,
      ),
      answer: db.prepare<[string, string], { id: number; content: string }>(
        `SELECT id, content FROM messages WHERE session_id = ? AND request_id = ? AND role = 'assistant'
          AND tool_calls IS NULL AND (status IS NULL OR status NOT IN ('error', 'aborted')) ORDER BY id DESC LIMIT 1`,
      ),
    };
  }

  /** Admits `input.entry` through `desk`, or answers it from the request it repeats. */
  admit(desk: FrontDeskPort, input: IdempotentAdmit): IdempotentHandle {
    const explicit = idempotencyKeyOf(input.req);
    const attempt = retryCountOf(input.req);
    const prepare = input.prepare ?? ((e: FrontDeskEntry) => e);
    if (explicit === undefined && attempt === undefined)
      return this.fresh(desk, prepare(input.entry), input.onEvent);
    const sessionKey = input.entry.ephemeral ? undefined : desk.route(input.entry).sessionKey;
    const scope = `${input.door}|${sha(header(input.req, "authorization") ?? "").slice(0, 24)}|${input.scopeKey ?? sessionKey ?? "-"}`;
    const fingerprint = sha(JSON.stringify(input.body));
    const key = explicit !== undefined ? `key:${explicit}` : `sdk:${fingerprint}`;
    const id = JSON.stringify([scope, key]);
    // A first SDK attempt is always a new request (the same words may be sent twice on purpose).
    const repeatable = explicit !== undefined || (attempt ?? 0) > 0;
    const row = repeatable ? this.st.get.get(scope, key) : undefined;
    const live = row && this.now() - row.updated_at <= IDEMPOTENCY_TTL_MS ? row : undefined;
    if (live && explicit !== undefined && live.fingerprint !== fingerprint)
      throw new HttpError(
        422,
        "idempotency_key_reused",
        `Idempotency-Key ${JSON.stringify(explicit)} was already used for a different request within the last 24 hours; use a new key for a new request`,
        {},
        "Idempotency-Key",
      );
    const inFlight = repeatable ? this.running.get(id) : undefined;
    const at = live?.session_key ? { sessionKey: live.session_key } : {};
    if (inFlight) return { ...inFlight, abort: () => undefined, replayed: true, ...at };
    if (live?.status === "done" && live.result) {
      const r = JSON.parse(live.result) as TurnResult;
      return {
        runId: r.runId,
        requestId: r.requestId,
        result: Promise.resolve(r),
        abort: () => undefined,
        replayed: true,
        ...at,
      };
    }
    let entry: FrontDeskEntry | undefined;
    const storedKey = live?.session_key ?? sessionKey;
    if (live && storedKey && !input.entry.ephemeral) {
      // Failed, or left running by a crash: run it again on the stored input (its user message, or the
      // tool results it continues after), in the session it was stored in.
      const user = this.st.user.get(storedKey, live.request_id);
      if (user) {
        const answered = this.st.answer.get(user.session_id, live.request_id);
        if (answered) return { ...this.replayStored(live, user.session_id, answered), sessionKey: storedKey };
        entry = {
          ...input.entry,
          session: { key: storedKey },
          resume: { sessionId: user.session_id, messageId: user.id, requestId: live.request_id },
        };
      }
    }
    entry ??= prepare(input.entry);
    const recordedKey = entry.ephemeral ? undefined : desk.route(entry).sessionKey;
    const record = (ids: { runId: string; requestId: string }): void => {
      this.st.put.run({ scope, key, fingerprint, sessionKey: recordedKey ?? null, ...ids, now: this.now() });
      if (++this.writes % 200 === 0) this.st.prune.run(this.now() - IDEMPOTENCY_TTL_MS);
    };
    const onAccepted = entry.onAccepted;
    const handle = desk.admit(
      {
        ...entry,
        onAccepted: (ids) => {
          record(ids);
          onAccepted?.(ids);
        },
      },
      input.onEvent,
    );
    const result = handle.result.then((r) => {
      this.running.delete(id);
      try {
        this.st.finish.run(
          r.finishReason === "error" ? "failed" : "done",
          JSON.stringify(r),
          this.now(),
          scope,
          key,
          r.requestId,
        );
      } catch {
        // The answer is delivered even when its record cannot be written (disk full): a repeat then
        // runs the turn again on the stored message, which is still never stored twice.
      }
      return r;
    });
    this.running.set(id, { runId: handle.runId, requestId: handle.requestId, result });
    return {
      runId: handle.runId,
      requestId: handle.requestId,
      result,
      abort: (why) => handle.abort(why),
      replayed: false,
      ...(recordedKey ? { sessionKey: recordedKey } : {}),
    };
  }

  private fresh(
    desk: FrontDeskPort,
    entry: FrontDeskEntry,
    onEvent?: (e: AgentEvent) => void,
  ): IdempotentHandle {
    const h = desk.admit(entry, onEvent);
    return {
      runId: h.runId,
      requestId: h.requestId,
      result: h.result,
      abort: (why) => h.abort(why),
      replayed: false,
      ...(entry.ephemeral ? {} : { sessionKey: desk.route(entry).sessionKey }),
    };
  }

  /** A turn that answered before a crash kept its row from being finished. */
  private replayStored(
    row: Row,
    sessionId: string,
    answer: { id: number; content: string },
  ): IdempotentHandle {
    const zero = { ...ZERO_USAGE };
    const r: TurnResult = {
      runId: row.run_id,
      requestId: row.request_id,
      sessionId,
      text: answer.content,
      finishReason: "stop",
      usage: zero,
      treeUsage: zero,
      treeCost: 0,
      subCalls: 0,
      assistantMessageId: answer.id,
    };
    return {
      runId: r.runId,
      requestId: r.requestId,
      result: Promise.resolve(r),
      abort: () => undefined,
      replayed: true,
    };
  }
}
