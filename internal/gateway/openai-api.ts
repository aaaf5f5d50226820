/**
 * OpenAI-compatible HTTP API: `POST /v1/chat/completions` (SSE and JSON) and `GET /v1/models`.
 * See docs/openai-api.md.
 *
 * `model` is `familiar` (the default agent) or `familiar/<agentId>`. Stateless by default: the request's
 * messages are the conversation (an ephemeral turn, nothing stored); with `user` or the
 * `X-Familiar-Session` header the last user message runs in the persistent session
 * `agent:<agent>:gateway:<name>`, where the client's tool results answer the session's pending calls
 * (openai-pending-calls.ts). Errors use OpenAI's JSON shape and status codes so SDKs raise the
 * matching exception classes.
 *
 * This is the benchmark path: no per-request allocations beyond the turn itself, no store reads.
 *
 * Over 300 lines on purpose: the OpenAI wire format (request mapping, SSE chunks, errors) is one
 * contract.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TurnResult } from "../core/host.js";
import type { AgentEvent } from "../core/agent-events.js";
import type { FrontDeskEntry } from "../inbound/front-desk.js";
import type { Usage } from "../models/types.js";
import { agentOfModel } from "./familiar-model.js";
import { HttpError, decodePathSegment, readJsonObject, sendJson, toHttpError } from "./http-util.js";
import { requireJsonBody } from "./request-guard.js";
import { bad, CLIENT_FIELDS, parseChatRequest } from "./openai-chat-request.js";
import { answerPending, closePending, pendingInSession } from "./openai-pending-calls.js";
import { createResponse, getResponse } from "./openai-responses.js";
import { namedSessionAgent, sessionName } from "./openai-session-name.js";
import { turnError } from "./turn-error-public.js";
import type { GatewayRuntime } from "./runtime.js";

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "invalid_request_error",
  403: "permission_error",
  404: "invalid_request_error",
  413: "invalid_request_error",
  415: "invalid_request_error",
  429: "rate_limit_error",
  503: "server_error",
};

/** Writes an error in OpenAI's shape `{error:{message,type,param,code}}`. */
export function sendOpenAiError(res: ServerResponse, err: HttpError): void {
  const body = JSON.stringify({
    error: {
      message: err.message,
      type: ERROR_TYPES[err.status] ?? (err.status >= 500 ? "server_error" : "invalid_request_error"),
      param: err.param ?? null,
      code: err.status === 401 ? "invalid_api_key" : err.code,
    },
  });
  res.writeHead(err.status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    ...err.headers,
  });
  res.end(body);
}

function usageJson(u: Usage): Record<string, unknown> {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.total || u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead },
    completion_tokens_details: { reasoning_tokens: u.reasoning },
  };
}

function finishReason(r: TurnResult["finishReason"]): string {
  if (r === "tool_calls") return "tool_calls";
  return r === "length" || r === "max_iterations" ? "length" : "stop";
}

/** The client's functions the model called, in OpenAI's message shape. */
function toolCallsJson(r: TurnResult): Record<string, unknown>[] {
  return (r.toolCalls ?? []).map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: c.arguments },
  }));
}

/** The OpenAI route handler; returns true when it handled the request. */
export function openAiRoutes(rt: GatewayRuntime) {
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    const path = url.pathname;
    if (!path.startsWith("/v1/")) return false;
    try {
      const denied = await rt.authorize(req);
      if (denied) throw denied;
      if (path === "/v1/chat/completions") {
        if (req.method !== "POST")
          throw new HttpError(405, "method_not_allowed", "use POST", { allow: "POST" });
        requireJsonBody(req);
        await completions(rt, req, res);
        return true;
      }
      if (path === "/v1/responses") {
        if (req.method !== "POST")
          throw new HttpError(405, "method_not_allowed", "use POST", { allow: "POST" });
        requireJsonBody(req);
        await createResponse(rt, req, res);
        return true;
      }
      if (req.method === "GET" && path.startsWith("/v1/responses/")) {
        getResponse(rt, res, decodePathSegment(path.slice("/v1/responses/".length)));
        return true;
      }
      if (req.method === "GET" && (path === "/v1/models" || path.startsWith("/v1/models/"))) {
        models(
          rt,
          res,
          path === "/v1/models" ? undefined : decodePathSegment(path.slice("/v1/models/".length)),
        );
        return true;
      }
      throw new HttpError(404, "not_found", `no route for ${req.method} ${path}`);
    } catch (err) {
      const e = toHttpError(err);
      if (!res.headersSent) sendOpenAiError(res, e);
      else res.end();
      return true;
    }
  };
}

function models(rt: GatewayRuntime, res: ServerResponse, one: string | undefined): void {
  const created = Math.floor(rt.ctx.startedAt / 1000);
  const entry = (id: string): Record<string, unknown> => ({
    id,
    object: "model",
    created,
    owned_by: "familiar",
  });
  const data = [entry("familiar"), ...rt.listAgents().map((a) => entry(`familiar/${a.id}`))];
  if (one !== undefined) {
    const m = data.find((d) => d.id === one);
    if (!m) throw new HttpError(404, "model_not_found", `The model '${one}' does not exist`, {}, "model");
    return sendJson(res, 200, m);
  }
  sendJson(res, 200, { object: "list", data });
}

async function completions(rt: GatewayRuntime, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const cfg = rt.ctx.config();
  const body = await readJsonObject(req, cfg.gateway.max_body_bytes);
  const model = body.model;
  if (typeof model !== "string" || model === "")
    throw bad("model is required (familiar or familiar/<agentId>)", "model");
  // `familiar` always answers: an undefined default agent is answered by the echo agent, which says
  // what is wrong (agent host), like every other channel. Only a named agent must exist.
  const agentId = agentOfModel(model, (id) => rt.findAgent(id) !== undefined);
  const header = req.headers["x-familiar-session"];
  const parsed = parseChatRequest(body, typeof header === "string" ? header : undefined);
  const { stream, includeUsage, sessionRaw, text, images, system, history } = parsed;
  const desk = rt.maybeFrontDesk();
  if (!desk) throw new HttpError(503, "unavailable", "the agent host is not running");
  const name = sessionRaw !== undefined ? sessionName(sessionRaw) : undefined;
  // A named session without familiar/<id> routes as the websocket routes the same name.
  const routed = agentId ?? (name !== undefined ? namedSessionAgent(desk, name) : undefined);
  const agentDef = rt.findAgent(routed ?? cfg.agents.default);
  if (parsed.client && agentDef && agentDef.engine !== "model") {
    const field = CLIENT_FIELDS.find((k) => body[k] !== undefined && body[k] !== null) ?? "model";
    throw bad(
      `${field}: agent "${agentDef.id}" runs on the ${agentDef.engine} engine, which cannot honour it`,
      field,
    );
  }
  const msg: FrontDeskEntry = {
    channel: "api",
    ...(routed !== undefined ? { agentId: routed } : {}),
    session: { gateway: name ?? "v1" },
    text,
    originLabel: "OpenAI-compatible API",
    ...(images.length ? { images } : {}),
    ...(system.length ? { extraSystem: system.join("\n\n") } : {}),
    ...(sessionRaw === undefined
      ? { ephemeral: { history, ...(parsed.continue ? { continue: true } : {}) } }
      : {}),
    ...(parsed.client ? { client: parsed.client } : {}),
  };

  const id = `chatcmpl-`;
  const created = Math.floor(Date.now() / 1000);
  // In a session: the trailing tool results answer the session's pending calls to the client's
  // functions; a new message closes calls left unanswered (openai-pending-calls.ts).
  let closed: string[] = [];
  const prepare = (e: FrontDeskEntry): FrontDeskEntry => {
    const pending = pendingInSession(rt.sessions, desk.route(e).sessionKey);
    if (parsed.results)
      return {
        ...e,
        stored: { prelude: answerPending(pending, parsed.results, "messages"), continue: true },
      };
    if (parsed.continue) throw bad("tool results need the calls they answer", "messages");
    closed = pending.map((c) => c.id);
    return pending.length ? { ...e, stored: { prelude: closePending(pending) } } : e;
  };
  const admit = (onEvent?: (e: AgentEvent) => void) =>
    rt.turnIdempotency.admit(desk, {
      door: "/v1/chat/completions",
      req,
      body,
      entry: msg,
      ...(sessionRaw !== undefined ? { prepare } : {}),
      ...(onEvent ? { onEvent } : {}),
    });
  const closedHeader = (): Record<string, string> =>
    closed.length ? { "x-familiar-closed-tool-calls": closed.join(", ") } : {};
  if (!stream) {
    const handle = admit();
    if (sessionRaw === undefined)
      res.once("close", () => !res.writableFinished && handle.abort("client disconnected"));
    const r = await handle.result;
    if (r.finishReason === "error") throw turnError(r);
    sendJson(
      res,
      200,
      {
        id: id + r.runId,
        object: "chat.completion",
        created,
        model,
        choices: [
          {
            index: 0,
            message: r.toolCalls?.length
              ? { role: "assistant", content: r.text || null, refusal: null, tool_calls: toolCallsJson(r) }
              : { role: "assistant", content: r.text, refusal: null },
            finish_reason: finishReason(r.finishReason),
            logprobs: null,
          },
        ],
        usage: usageJson(r.treeUsage),
      },
      {
        ...usageHeaders(r),
        ...closedHeader(),
        ...(handle.replayed ? { "idempotent-replayed": "true" } : {}),
      },
    );
    return;
  }

  // Streaming. Headers go out with the first delta, so a turn that fails before saying anything still
  // gets a proper HTTP status (and the SDK its exception class).
  let started = false;
  let runId = "";
  let requestId = "";
  const prefix = (): string =>
    `{"id":"${id}${runId}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`;
  const start = (): void => {
    if (started) return;
    started = true;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-familiar-request-id": requestId,
      ...closedHeader(),
    });
    res.write(
      `data: ${prefix()}[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n`,
    );
  };
  const onEvent = (e: AgentEvent): void => {
    if (e.type !== "text_delta" || e.delta === "") return;
    start();
    res.write(
      `data: ${prefix()}[{"index":0,"delta":{"content":${JSON.stringify(e.delta)}},"finish_reason":null}]}\n\n`,
    );
  };
  const handle = admit(onEvent);
  runId = handle.runId;
  requestId = handle.requestId;
  if (sessionRaw === undefined)
    res.once("close", () => !res.writableFinished && handle.abort("client disconnected"));
  const r = await handle.result;
  if (r.finishReason === "error" && !started) throw turnError(r);
  // A repeat answered from (or joined to) the first request never saw its deltas: one delta.
  if (handle.replayed && !started && r.text) onEvent({ type: "text_delta", runId: r.runId, delta: r.text });
  start();
  if (r.finishReason === "error") {
    const e = turnError(r);
    res.write(
      `data: ${JSON.stringify({ error: { message: e.message, type: "server_error", param: null, code: e.code } })}\n\n`,
    );
  } else {
    const calls = toolCallsJson(r).map((c, index) => ({ index, ...c }));
    if (calls.length > 0)
      res.write(
        `data: ${prefix()}[{"index":0,"delta":{"tool_calls":${JSON.stringify(calls)}},"finish_reason":null}]}\n\n`,
      );
    res.write(
      `data: ${prefix()}[{"index":0,"delta":{},"finish_reason":"${finishReason(r.finishReason)}"}]}\n\n`,
    );
    if (includeUsage) res.write(`data: ${prefix()}[],"usage":${JSON.stringify(usageJson(r.treeUsage))}}\n\n`);
  }
  res.end("data: [DONE]\n\n");
}

/** `X-Familiar-Request-Id` and `X-Familiar-Usage-*` headers: the turn's call-tree totals (also used by /api). */
export function usageHeaders(r: TurnResult): Record<string, string> {
  return {
    "x-familiar-request-id": r.requestId,
    "x-familiar-usage-input": String(r.treeUsage.input),
    "x-familiar-usage-output": String(r.treeUsage.output),
    "x-familiar-usage-cost": String(r.treeCost),
    "x-familiar-usage-subcalls": String(r.subCalls),
    // The cost above is an estimate when a call's model has no price: say so, and why, beside it.
    ...(r.treeCostEstimatedCalls
      ? {
          "x-familiar-usage-cost-estimated": `${r.treeCostEstimatedCalls} call(s) of a model without a price in models.pricing, counted at budgets.default_price`,
        }
      : {}),
  };
}
