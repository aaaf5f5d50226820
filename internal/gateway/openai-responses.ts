/**
 * `POST /v1/responses` and `GET /v1/responses/{id}`: OpenAI's Responses API (issue 34), enough for
 * `client.responses.create` (streamed and not), the Vercel AI SDK's default `createOpenAI()(model)`
 * and LangChain's `useResponsesApi`.
 *
 * Each request runs one ephemeral turn whose history is the stored conversation of
 * `previous_response_id` (if any) followed by `input`. A stored response (`store`, default true) keeps
 * its whole conversation and its output items in SQLite (`v1_responses`, `v1_response_items`), so a
 * follow-up continues it, and `item_reference` finds items of earlier responses. Continuing from an
 * older response branches: each response has its own conversation.
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
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AgentEvent } from "../core/agent-events.js";
import type { EphemeralEntry, TurnResult } from "../core/host.js";
import type { FrontDeskEntry } from "../inbound/front-desk.js";
import type { Usage } from "../models/types.js";
import type { Db } from "../store/db.js";
import { agentOfModel } from "./familiar-model.js";
import { HttpError, readJsonObject, sendJson } from "./http-util.js";
import { bad } from "./openai-chat-request.js";
import { turnError } from "./turn-error-public.js";
import { parseResponsesRequest, type ResponsesRequest } from "./openai-responses-request.js";
import type { GatewayRuntime } from "./runtime.js";

type Obj = Record<string, unknown>;
const rid = (prefix: string): string => `${prefix}_${randomBytes(16).toString("hex")}`;

function usageJson(u: Usage): Obj {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.total || u.input + u.output,
  };
}

const messageItem = (id: string, text: string, status: "in_progress" | "completed"): Obj => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: status === "completed" ? [{ type: "output_text", text, annotations: [], logprobs: [] }] : [],
});

const callItem = (
  c: { id: string; name: string; arguments: string },
  status: "in_progress" | "completed",
): Obj => ({
  id: rid("fc"),
  type: "function_call",
  status,
  call_id: c.id,
  name: c.name,
  arguments: status === "completed" ? c.arguments : "",
});

/** The stored conversations and items (see the module comment). */
class ResponseStore {
  private st;
  constructor(db: Db) {
    this.st = {
      get: db.prepare<[string], { agent_id: string | null; conversation: string; response: string }>(
        "SELECT agent_id, conversation, response FROM v1_responses WHERE id = ?",
      ),
      item: db.prepare<[string], { item: string }>("SELECT item FROM v1_response_items WHERE id = ?"),
      put: db.prepare(
        "INSERT INTO v1_responses (id, agent_id, conversation, response, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
      putItem: db.prepare(
        "INSERT OR REPLACE INTO v1_response_items (id, response_id, item) VALUES (?, ?, ?)",
      ),
      save: db.transaction((id: string, agent: string | null, conv: string, response: Obj, now: number) => {
        this.st.put.run(id, agent, conv, JSON.stringify(response), now);
        for (const it of response.output as Obj[]) this.st.putItem.run(String(it.id), id, JSON.stringify(it));
      }),
    };
  }
  get(id: string): { agentId: string | null; conversation: EphemeralEntry[]; response: Obj } | undefined {
    const r = this.st.get.get(id);
    return r
      ? {
          agentId: r.agent_id,
          conversation: JSON.parse(r.conversation) as EphemeralEntry[],
          response: JSON.parse(r.response) as Obj,
        }
      : undefined;
  }
  item(id: string): Obj | undefined {
    const r = this.st.item.get(id);
    return r ? (JSON.parse(r.item) as Obj) : undefined;
  }
  save(id: string, agentId: string | null, conversation: EphemeralEntry[], response: Obj, now: number): void {
    this.st.save(id, agentId, JSON.stringify(conversation), response, now);
  }
}

const stores = new WeakMap<Db, ResponseStore>();
function storeOf(db: Db): ResponseStore {
  let s = stores.get(db);
  if (!s) stores.set(db, (s = new ResponseStore(db)));
  return s;
}

/** `GET /v1/responses/{id}`: a stored response. */
export function getResponse(rt: GatewayRuntime, res: ServerResponse, id: string): void {
  const r = storeOf(rt.ctx.db).get(id);
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
  const store = storeOf(rt.ctx.db);
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
  const agentDef = rt.findAgent(agentId ?? cfg.agents.default);
  if (p.client && agentDef && agentDef.engine !== "model")
    throw bad(
      `agent "${agentDef.id}" runs on the ${agentDef.engine} engine, which cannot honour tools, text.format or sampling`,
      p.client.tools ? "tools" : "text",
    );
  const history = [...(prev?.conversation ?? []), ...p.entries];
  const desk = rt.maybeFrontDesk();
  if (!desk) throw new HttpError(503, "unavailable", "the agent host is not running");
  const system = [...(p.instructions ? [p.instructions] : []), ...p.system];
  const entry: FrontDeskEntry = {
    channel: "api",
    ...(agentId !== undefined ? { agentId } : {}),
    session: { gateway: "v1" },
    text: p.text,
    originLabel: "OpenAI Responses API",
    ...(p.images.length ? { images: p.images } : {}),
    ...(system.length ? { extraSystem: system.join("\n\n") } : {}),
    ephemeral: { history, ...(p.continue ? { continue: true } : {}) },
    ...(p.client ? { client: p.client } : {}),
  };
  const id = rid("resp");
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
    if (p.store) {
      const conv: EphemeralEntry[] = [...history];
      if (!p.continue) conv.push({ role: "user", content: p.text });
      conv.push(
        r.toolCalls?.length
          ? { role: "assistant", content: r.text, tool_calls: r.toolCalls }
          : { role: "assistant", content: r.text },
      );
      store.save(id, agentId ?? null, conv, response, rt.ctx.clock.now());
    }
    return response;
  };
  const admit = (onEvent?: (e: AgentEvent) => void) =>
    rt.turnIdempotency.admit(desk, {
      door: "/v1/responses",
      req,
      body,
      entry,
      ...(onEvent ? { onEvent } : {}),
    });

  if (!p.stream) {
    const handle = admit();
    res.once("close", () => !res.writableFinished && handle.abort("client disconnected"));
    const r = await handle.result;
    if (r.finishReason === "error") throw turnHttpError(r);
    const output: Obj[] = [];
    if (r.text || !r.toolCalls?.length) output.push(messageItem(rid("msg"), r.text, "completed"));
    for (const c of r.toolCalls ?? []) output.push(callItem(c, "completed"));
    const response = finish(r, output);
    sendJson(res, 200, { ...response, output_text: r.text }, { "x-familiar-request-id": r.requestId });
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
  res.once("close", () => !res.writableFinished && handle.abort("client disconnected"));
  const r = await handle.result;
  if (r.finishReason === "error" && !started) throw turnHttpError(r);
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

function formatOut(f: NonNullable<NonNullable<ResponsesRequest["client"]>["responseFormat"]>): Obj {
  return f.type === "json_schema" ? { type: "json_schema", ...f.json_schema } : { type: f.type };
}

function turnHttpError(r: TurnResult): HttpError {
  return turnError(r);
}
