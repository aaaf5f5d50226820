/**
 * `POST /v1/responses` and `GET /v1/responses/{id}`: OpenAI's Responses API (issue 34), enough for
 * `client.responses.create` (streamed and not), the Vercel AI SDK's default `createOpenAI()(model)`
 * and LangChain's `useResponsesApi`.
 *
 * A stored request (`store`, default true) runs in its chain's Familiar session
 * (openai-response-chain.ts: a new session, the named one, the session of `previous_response_id`,
 * or a fork of it for a branch); `store: false` runs one ephemeral turn whose history is the
 * conversation of `previous_response_id` followed by `input`. A stored response keeps its whole
 * conversation and its output items in SQLite (openai-responses-store.ts), so `item_reference` finds
 * items of earlier responses and a branch can be seeded. A repeat answers with the stored response.
 *
 * Streaming events follow the SDK's types (node_modules/openai/resources/responses):
 * `response.created`, `response.in_progress`, per message `response.output_item.added`,
 * `response.content_part.added`, `response.output_text.delta`*, `response.output_text.done`,
 * `response.content_part.done`, `response.output_item.done`; per client function call
 * `response.output_item.added`, `response.function_call_arguments.delta`,
 * `response.function_call_arguments.done`, `response.output_item.done`; then `response.completed`
 * (or `response.failed`). Every event has `sequence_number`.
 *
 * Over 300 lines on purpose: `createResponse` follows one request from the turn to the stored
 * response through the ordered event stream above (sequence numbers, item ids and output indexes are
 * its shared state); request parsing is already apart in openai-responses-request.ts.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AgentEvent } from "../core/agent-events.js";
import type { EphemeralEntry, TurnResult } from "../core/host.js";
import type { FrontDeskEntry, FrontDeskPort } from "../inbound/front-desk.js";
import { agentOfModel } from "./familiar-model.js";
import { callItem, formatOut, messageItem, rid, usageJson, type Obj } from "./openai-responses-items.js";
import { HttpError, readJsonObject, sendJson } from "./http-util.js";
import { bad } from "./openai-chat-request.js";
import { sessionName } from "./openai-session-name.js";
import { planChain } from "./openai-response-chain.js";
import { responseStoreOf } from "./openai-responses-store.js";
import { turnError } from "./turn-error-public.js";
import { parseResponsesRequest, type ResponsesRequest } from "./openai-responses-request.js";
import type { GatewayRuntime } from "./runtime.js";

/** Responses a running request of this process continues its session from (openai-response-chain.ts). */
const continuing = new Set<string>();

/** `GET /v1/responses/{id}`: a stored response. */
export function getResponse(rt: GatewayRuntime, res: ServerResponse, id: string): void {
  const r = responseStoreOf(rt.ctx.db).get(id);
  if (!r)
    throw new HttpError(
      404,
      "not_found",
      `No response with id '${id}' (only stored responses are kept)`,
      {},
      "id",
    );
  sendJson(res, 200, r.response);
}

/** `POST /v1/responses`. */
export async function createResponse(
  rt: GatewayRuntime,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const cfg = rt.ctx.config();
  const body = await readJsonObject(req, cfg.gateway.max_body_bytes);
  const model = body.model;
  if (typeof model !== "string")
    throw new HttpError(
      404,
      "model_not_found",
      `The model '${String(model)}' does not exist (use familiar or familiar/<agentId>)`,
      {},
      "model",
    );
  const agentId = agentOfModel(model, (id) => rt.findAgent(id) !== undefined);
  const store = responseStoreOf(rt.ctx.db);
  const p: ResponsesRequest = parseResponsesRequest(body, (id) => store.item(id));
  if (!p.continue && !p.text && p.images.length === 0) throw bad("the last user message is empty", "input");
  const prev = p.previousResponseId ? store.get(p.previousResponseId) : undefined;
  if (p.previousResponseId && !prev)
    throw new HttpError(
      404,
      "not_found",
      `Previous response with id '${p.previousResponseId}' not found`,
      {},
      "previous_response_id",
    );
  // A chain stays with its agent: another agent's conversation (its session, its memory) is not
  // this one's to continue.
  const wanted = agentId ?? cfg.agents.default;
  if (prev && (prev.agentId ?? cfg.agents.default) !== wanted)
    throw bad(
      `previous_response_id: response ${prev.id} belongs to agent "${prev.agentId ?? cfg.agents.default}", not to "${wanted}" (the model of this request)`,
      "previous_response_id",
    );
  const agentDef = rt.findAgent(wanted);
  if (p.client && agentDef && agentDef.engine !== "model")
    throw bad(
      `agent "${agentDef.id}" runs on the ${agentDef.engine} engine, which cannot honour tools, text.format or sampling`,
      p.client.tools ? "tools" : "text",
    );
  const maybeDesk = rt.maybeFrontDesk();
  if (!maybeDesk) throw new HttpError(503, "unavailable", "the agent host is not running");
  const desk: FrontDeskPort = maybeDesk;
  const id = rid("resp");
  const header = req.headers["x-familiar-session"];
  const named = typeof header === "string" ? header : typeof body.user === "string" ? body.user : undefined;
  // `store: false` stays one ephemeral turn; a stored request runs in its chain's session.
  const plan = p.store
    ? planChain({
        sessions: rt.sessions,
        store,
        desk,
        p,
        ...(prev ? { prev } : {}),
        ...(named !== undefined ? { named: sessionName(named) } : {}),
        newName: id,
        running: continuing,
        ...(rt.deps.containment ? { taintOf: (s: string) => rt.deps.containment!.sourcesOf(s) } : {}),
      })
    : undefined;
  // Claimed until the answer is stored as the session's latest (or the request failed).
  const claimed = plan?.mode === "continue" ? prev?.id : undefined;
  if (claimed) continuing.add(claimed);
  try {
    await respond();
  } finally {
    if (claimed) continuing.delete(claimed);
  }

  async function respond(): Promise<void> {
    const system = [...(p.instructions ? [p.instructions] : []), ...p.system];
    const entry: FrontDeskEntry = {
      channel: "api",
      ...(agentId !== undefined ? { agentId } : {}),
      session: plan?.session ?? { gateway: "v1" },
      text: p.text,
      originLabel: "OpenAI Responses API",
      ...(p.images.length ? { images: p.images } : {}),
      ...(system.length ? { extraSystem: system.join("\n\n") } : {}),
      ...(plan
        ? plan.taint
          ? { taint: plan.taint }
          : {}
        : {
            ephemeral: {
              history: [...(prev?.conversation ?? []), ...p.entries],
              ...(p.continue ? { continue: true } : {}),
            },
          }),
      ...(p.client ? { client: p.client } : {}),
    };
    const history = [...(prev?.conversation ?? []), ...p.entries];
    const created = Math.floor(rt.ctx.clock.now() / 1000);
    const base = (status: string): Obj => ({
      id,
      object: "response",
      created_at: created,
      status,
      error: null,
      incomplete_details: null,
      instructions: p.instructions ?? null,
      max_output_tokens: p.client?.maxTokens ?? null,
      metadata: p.metadata,
      model,
      output: [],
      parallel_tool_calls: p.client?.parallelToolCalls ?? true,
      previous_response_id: p.previousResponseId ?? null,
      store: p.store,
      temperature: p.client?.temperature ?? null,
      text: { format: p.client?.responseFormat ? formatOut(p.client.responseFormat) : { type: "text" } },
      tool_choice: body.tool_choice ?? "auto",
      tools: body.tools ?? [],
      top_p: null,
      truncation: "disabled",
      usage: null,
    });
    const finish = (r: TurnResult, output: Obj[]): Obj => {
      const response: Obj = {
        ...base(
          r.finishReason === "length" || r.finishReason === "max_iterations" ? "incomplete" : "completed",
        ),
        output,
        usage: usageJson(r.treeUsage),
      };
      if (response.status === "incomplete") response.incomplete_details = { reason: "max_output_tokens" };
      if (p.store && !replayed) {
        const conv: EphemeralEntry[] = [...history];
        if (!p.continue) conv.push({ role: "user", content: p.text });
        conv.push(
          r.toolCalls?.length
            ? { role: "assistant", content: r.text, tool_calls: r.toolCalls }
            : { role: "assistant", content: r.text },
        );
        store.save(
          { id, agentId: agentId ?? null, conversation: conv, response },
          sessionKey ? { sessionKey, sessionId: r.sessionId, requestId: r.requestId } : undefined,
          rt.ctx.clock.now(),
        );
      }
      return response;
    };
    // The session the turn runs in, named to the client (and the console) in `X-Familiar-Session`.
    // (A repeat of a failed first attempt runs in the first attempt's session: the handle says which.)
    let sessionKey = plan ? desk.route({ ...entry, session: plan.session }).sessionKey : undefined;
    const extra = (r?: { requestId: string }): Record<string, string> => ({
      ...(r ? { "x-familiar-request-id": r.requestId } : {}),
      ...(sessionKey ? { "x-familiar-session": sessionKey } : {}),
      ...(plan?.closed.length ? { "x-familiar-closed-tool-calls": plan.closed.join(", ") } : {}),
      ...(p.ignored.length ? { "x-familiar-ignored": p.ignored.join(",") } : {}),
    });
    let replayed = false;
    const admit = (onEvent?: (e: AgentEvent) => void) =>
      rt.turnIdempotency.admit(desk, {
        door: "/v1/responses",
        req,
        body,
        entry,
        ...(plan ? { prepare: plan.prepare } : {}),
        ...(plan?.scopeKey ? { scopeKey: plan.scopeKey } : {}),
        ...(onEvent ? { onEvent } : {}),
      });

    // A persistent turn runs to its end when the client goes (its answer is stored, as on chat).
    const abortOnClose = (h: { abort(why: string): void }): void => {
      if (!plan) res.once("close", () => !res.writableFinished && h.abort("client disconnected"));
    };
    if (!p.stream) {
      const handle = admit();
      replayed = handle.replayed;
      if (plan) sessionKey = handle.sessionKey;
      abortOnClose(handle);
      const r = await handle.result;
      if (r.finishReason === "error") throw turnHttpError(r);
      // A repeat (Idempotency-Key, an SDK retry) answers with the response the first attempt stored.
      const first = replayed ? store.byRequest(r.requestId) : undefined;
      if (first) {
        sendJson(
          res,
          200,
          { ...first.response, output_text: r.text },
          { ...extra(r), "idempotent-replayed": "true" },
        );
        return;
      }
      const output: Obj[] = [];
      if (r.text || !r.toolCalls?.length) output.push(messageItem(rid("msg"), r.text, "completed"));
      for (const c of r.toolCalls ?? []) output.push(callItem(c, "completed"));
      const response = finish(r, output);
      sendJson(res, 200, { ...response, output_text: r.text }, extra(r));
      return;
    }
    // Streaming. Headers go with the first event, so a turn failing before it starts gets an HTTP status.
    let seq = 0;
    let started = false;
    const send = (type: string, data: Obj): void => {
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
    };
    const output: Obj[] = [];
    let open: { id: string; index: number; text: string } | undefined;
    const begin = (): void => {
      if (started) return;
      started = true;
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        connection: "keep-alive",
        ...extra(),
      });
      send("response.created", { response: base("in_progress") });
      send("response.in_progress", { response: base("in_progress") });
    };
    const closeMessage = (): void => {
      if (!open) return;
      const { id: itemId, index, text } = open;
      const part = { type: "output_text", text, annotations: [], logprobs: [] };
      send("response.output_text.done", {
        item_id: itemId,
        output_index: index,
        content_index: 0,
        text,
        logprobs: [],
      });
      send("response.content_part.done", { item_id: itemId, output_index: index, content_index: 0, part });
      const item = messageItem(itemId, text, "completed");
      output[index] = item;
      send("response.output_item.done", { output_index: index, item });
      open = undefined;
    };
    const delta = (d: string): void => {
      begin();
      if (!open) {
        open = { id: rid("msg"), index: output.length, text: "" };
        output.push(messageItem(open.id, "", "in_progress"));
        send("response.output_item.added", {
          output_index: open.index,
          item: messageItem(open.id, "", "in_progress"),
        });
        send("response.content_part.added", {
          item_id: open.id,
          output_index: open.index,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [], logprobs: [] },
        });
      }
      open.text += d;
      send("response.output_text.delta", {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        delta: d,
        logprobs: [],
      });
    };
    const onEvent = (e: AgentEvent): void => {
      if (e.type === "text_delta" && e.delta) delta(e.delta);
      // A step that called the agent's own tools ends its text: the next text is a new message.
      else if (e.type === "iteration_text") closeMessage();
    };
    const handle = admit(onEvent);
    replayed = handle.replayed;
    if (plan) sessionKey = handle.sessionKey;
    abortOnClose(handle);
    const r = await handle.result;
    if (r.finishReason === "error" && !started) throw turnHttpError(r);
    const first = replayed && !started ? store.byRequest(r.requestId) : undefined;
    if (first) {
      begin();
      for (const [index, item] of (first.response.output as Obj[]).entries()) {
        send("response.output_item.added", { output_index: index, item });
        send("response.output_item.done", { output_index: index, item });
      }
      send("response.completed", { response: first.response });
      res.end();
      return;
    }
    if (handle.replayed && !started && r.text) delta(r.text);
    begin();
    if (r.finishReason === "error") {
      closeMessage();
      const e = turnHttpError(r);
      send("response.failed", {
        response: { ...base("failed"), output, error: { code: e.code, message: e.message } },
      });
      res.end();
      return;
    }
    if (!open && output.length === 0 && !r.toolCalls?.length) delta(r.text || "");
    closeMessage();
    for (const c of r.toolCalls ?? []) {
      const index = output.length;
      const added = callItem(c, "in_progress");
      output.push(added);
      send("response.output_item.added", { output_index: index, item: added });
      send("response.function_call_arguments.delta", {
        item_id: added.id,
        output_index: index,
        delta: c.arguments,
      });
      send("response.function_call_arguments.done", {
        item_id: added.id,
        output_index: index,
        name: c.name,
        arguments: c.arguments,
      });
      const done = { ...added, status: "completed", arguments: c.arguments };
      output[index] = done;
      send("response.output_item.done", { output_index: index, item: done });
    }
    send("response.completed", { response: finish(r, output) });
    res.end();
  }
}

function turnHttpError(r: TurnResult): HttpError {
  return turnError(r);
}
