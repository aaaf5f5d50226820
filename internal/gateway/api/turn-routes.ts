/**
 * Turns in a stored session over `/api`: `POST .../messages` (synchronous, answers `{user, assistant}`),
 * `POST .../messages/stream` (SSE) and `POST .../abort` (stops the running turn). The two turn routes
 * store the user message before anything runs and answer with the call-tree totals (usage, cost,
 * sub-calls) in the body; the synchronous reply also carries them as `X-Familiar-Usage-*` headers.
 *
 * SSE event order (docs/api.md): `user-message`, then per model iteration `thought`* and `token`*;
 * an iteration that calls tools sends `token-reset` once, then `tool-call` / `tool-result` pairs;
 * finally exactly one of `done` or `error`. A client that disconnects does not stop the turn (only
 * `.../abort` does): the answer is stored and readable through `GET .../messages`, and
 * `GET .../messages/stream` with `Last-Event-ID` resumes the stream (stream-replay.ts).
 */
import type { IncomingMessage } from "node:http";
import { z } from "zod";
import type { AgentEvent } from "../../core/agent-events.js";
import type { TurnResult } from "../../core/host.js";
import type { FrontDeskEntry } from "../../inbound/front-desk.js";
import type { StoredMessage } from "../../session/session-store.js";
import { usageHeaders } from "../openai-api.js";
import { sendJson, type ApiContext } from "./api-context.js";
import { messageJson, turnTotalsJson } from "./api-json.js";
import type { ApiRoute } from "./api-route.js";
import { assertLiveForWrite } from "./session-guards.js";
import { SseWriter, turnEventForwarder } from "./sse.js";
import { StreamRegistry } from "./stream-replay.js";
import { apiError } from "./api-errors.js";
import { turnFailure } from "./turn-errors.js";
import { chunkEventForwarder, chunkFinish, streamVocabulary } from "./chunk-vocabulary.js";

const messageBody = z.object({ message: z.string().min(1, { error: "must not be empty" }) }).strict();
const abortBody = z.object({ request_id: z.string().min(1).optional() }).strict();

/** The id a reconnecting client last saw: `Last-Event-ID` (EventSource sends it) or `?last_event_id`. */
function lastEventId(req: IncomingMessage, url: URL): number {
  const header = req.headers["last-event-id"];
  const raw = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get("last_event_id") ?? "";
  if (raw.trim() === "") return 0;
  if (!/^\d+$/.test(raw.trim()))
    throw apiError(
      400,
      "invalid_query",
      `Last-Event-ID: expected an event id, got "${raw}"`,
      "last_event_id",
    );
  return Number(raw.trim());
}

/** A turn in a stored session, as the front desk takes it: the session's agent, the session's key. */
function restEntry(t: { agentId: string; key: string; text: string }): FrontDeskEntry {
  return {
    channel: "api",
    agentId: t.agentId,
    session: { key: t.key },
    text: t.text,
    originLabel: "REST API",
  };
}

export function turnRoutes(api: ApiContext): ApiRoute[] {
  const streams = new StreamRegistry();
  // Prepared once: these run on every turn.
  // messages(session_id, id) is indexed and the user message is the session's newest, so this walks
  // back only a few rows (request_id itself has no index).
  const userStmt = api.db.prepare<[string, string], StoredMessage>(
    "SELECT * FROM messages WHERE session_id = ? AND request_id = ? AND role = 'user' ORDER BY id DESC LIMIT 1",
  );
  const byIdStmt = api.db.prepare<[number], StoredMessage>("SELECT * FROM messages WHERE id = ?");
  /** The user message `submit` just committed: it went to the live session of `key`. */
  const userMessage = (key: string, requestId: string): StoredMessage | undefined => {
    const head = api.host().sessions.head(key);
    return head ? userStmt.get(head.id, requestId) : undefined;
  };
  const byId = (id: number | undefined): StoredMessage | undefined =>
    id === undefined ? undefined : byIdStmt.get(id);

  /** Validates everything that can fail before a turn is queued; throws the matching error. */
  const prepare = async (
    req: IncomingMessage,
    params: Record<string, string>,
    suffix: string,
  ): Promise<{ agentId: string; key: string; text: string; body: unknown }> => {
    const agentId = params.id ?? "";
    const s = api.session(agentId, params.sid ?? "");
    assertLiveForWrite(api, agentId, s, suffix);
    const body = await api.body(req, messageBody);
    api.checkModel(api.agent(agentId));
    return { agentId, key: s.key, text: body.message, body };
  };
  /** Admits the turn once per `Idempotency-Key` (or SDK retry): a repeat gets the first turn. */
  const admit = (
    req: IncomingMessage,
    door: string,
    t: { agentId: string; key: string; text: string; body: unknown },
    onEvent?: (e: AgentEvent) => void,
  ) =>
    api.rt.turnIdempotency.admit(api.desk(), {
      door,
      req,
      body: t.body,
      entry: restEntry(t),
      ...(onEvent ? { onEvent } : {}),
    });

  const stored = (r: TurnResult): Record<string, unknown> | null => {
    const m = byId(r.assistantMessageId);
    return m ? messageJson(m) : null;
  };

  return [
    {
      // Stops the session's running turn (`/stop` over REST): the partial text is stored with status
      // `aborted` and the turn's stream ends with `done` (finish_reason `aborted`). Queued messages of
      // the session still run. A compacted session redirects (308) like every other write.
      method: "POST",
      pattern: "/api/agents/:id/sessions/:sid/abort",
      handler: async ({ req, res, params }) => {
        const agentId = params.id ?? "";
        const s = api.session(agentId, params.sid ?? "");
        assertLiveForWrite(api, agentId, s, "/abort");
        // With `request_id` (the stream's X-Familiar-Request-Id) only that turn is stopped, never one
        // that started after it ended.
        const body = await api.body(req, abortBody);
        const host = api.host();
        const aborted = body.request_id ? host.abortRequest(s.key, body.request_id) : host.abort(s.key);
        sendJson(res, 200, { session_id: s.id, aborted });
      },
    },
    {
      method: "POST",
      pattern: "/api/agents/:id/sessions/:sid/messages",
      handler: async ({ req, res, params }) => {
        const t = await prepare(req, params, "/messages");
        const handle = admit(req, "/api/messages", t);
        const user = userMessage(t.key, handle.requestId);
        const r = await handle.result;
        const body = {
          session_id: r.sessionId,
          user: user ? messageJson(user) : null,
          assistant: stored(r),
          finish_reason: r.finishReason,
          ...turnTotalsJson(r),
        };
        if (r.finishReason === "error") {
          const e = turnFailure(r);
          sendJson(
            res,
            e.status,
            { error: { code: e.code, message: e.message }, ...body },
            { ...usageHeaders(r), ...e.headers },
          );
          return;
        }
        sendJson(res, 200, body, {
          ...usageHeaders(r),
          ...(handle.replayed ? { "idempotent-replayed": "true" } : {}),
        });
      },
    },
    {
      method: "POST",
      pattern: "/api/agents/:id/sessions/:sid/messages/stream",
      handler: async ({ req, res, url, params }) => {
        const vocabulary = streamVocabulary(url);
        const t = await prepare(req, params, "/messages/stream");
        const sse = new SseWriter(res);
        // Events of the turn may fire while `submit` runs; hold them until `user-message` is out.
        const held: AgentEvent[] = [];
        const to: { forward?: (e: AgentEvent) => void } = {};
        const handle = admit(req, "/api/messages/stream", t, (e) =>
          to.forward ? to.forward(e) : held.push(e),
        );
        // The turn's events are recorded (for a client that reconnects) and written to this client.
        const stream = streams.open(handle.requestId, t.key);
        sse.open({ "x-familiar-request-id": handle.requestId });
        stream.attach(sse, 0);
        const chunks = vocabulary === "chunks" ? chunkEventForwarder(stream) : undefined;
        const user = userMessage(t.key, handle.requestId);
        if (!chunks) stream.send("user-message", { message: user ? messageJson(user) : null });
        const forward = chunks ? chunks.forward : turnEventForwarder(stream);
        for (const e of held.splice(0)) forward(e);
        to.forward = forward;
        try {
          const r = await handle.result;
          if (chunks) {
            chunks.close();
            const failure = r.finishReason === "error" ? turnFailure(r) : undefined;
            chunkFinish(
              stream,
              r,
              { agentId: t.agentId, question: t.text },
              failure ? { code: failure.code, message: failure.message } : undefined,
            );
            return;
          }
          const totals = { session_id: r.sessionId, ...turnTotalsJson(r) };
          if (r.finishReason === "error") {
            const e = turnFailure(r);
            stream.send("error", {
              error: { code: e.code, message: e.message },
              message: stored(r),
              ...totals,
            });
          } else stream.send("done", { message: stored(r), finish_reason: r.finishReason, ...totals });
        } finally {
          stream.end();
        }
      },
    },
    {
      // Reconnects to a turn's stream: the events after `Last-Event-ID`, then the live ones while the
      // turn runs. `request_id` picks the turn (default: the session's newest streamed turn). 204 when
      // the turn is over and nothing is left (EventSource then stops reconnecting).
      method: "GET",
      pattern: "/api/agents/:id/sessions/:sid/messages/stream",
      handler: ({ req, res, url, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        const after = lastEventId(req, url);
        const requestId = url.searchParams.get("request_id");
        const found = requestId ? streams.get(requestId) : streams.latest(s.key);
        const stream = found?.sessionKey === s.key ? found : undefined;
        if (!stream)
          throw apiError(
            404,
            "stream_not_found",
            `${requestId ? `no stream of turn ${requestId}` : "no streamed turn"} in session ${s.id} to resume (finished turns are kept for a while only); read the stored messages with GET .../messages`,
          );
        if (after > stream.lastId && stream.finished)
          throw apiError(
            400,
            "invalid_query",
            `Last-Event-ID: the stream has only ${stream.lastId} events`,
            "last_event_id",
          );
        if (stream.finished && after === stream.lastId) {
          res.writeHead(204, { "x-familiar-request-id": stream.requestId });
          res.end();
          return;
        }
        const sse = new SseWriter(res);
        sse.open({ "x-familiar-request-id": stream.requestId });
        stream.attach(sse, after);
      },
    },
  ];
}
