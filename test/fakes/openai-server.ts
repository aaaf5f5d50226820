/**
 * A fake OpenAI-compatible chat-completions server on 127.0.0.1 (node:http, port 0) for tests and
 * benchmarks. It speaks the wire format of api.openai.com closely enough for the official `openai` SDK:
 * SSE chunks with `chat.completion.chunk` objects, tool-call deltas split across chunks by `index`,
 * `reasoning_content` deltas, a final usage chunk when `stream_options.include_usage` is set, and
 * `data: [DONE]`; errors use OpenAI's `{ error: { message, type, param, code } }` shape.
 *
 * Replies are scripted with {@link FakeStep}s. Resolution order for each chat request:
 *   1. the first queued step whose `model` is unset or equals the request's model (FIFO);
 *   2. the handler set with `setHandler`, when it returns a step;
 *   3. the default: `echo: <last user message text>` with realistic usage.
 *
 * Standalone (benchmarks): `node --import tsx test/fakes/openai-server.ts --port N [--latency-ms M]`
 * prints the base URL on stdout.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { requestChars, type FakeBilling } from "./fake-billing.js";

/** A scripted tool call; `arguments` objects are JSON-encoded. */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string | object;
}

/** Scoping shared by every step: only a request for this model consumes the step. */
interface StepScope {
  model?: string;
}

/** A successful reply (streamed or not, as the client asked). */
export interface FakeReplyStep extends StepScope {
  text?: string;
  reasoning?: string;
  toolCalls?: FakeToolCall[];
  /** Usage object sent as-is; `false` sends none even when the client asked for it. Default: estimated. */
  usage?: Record<string, unknown> | false;
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Characters per content/argument delta when streaming. Default 8. */
  chunkSize?: number;
  /** Real delay between streamed chunks in ms. Default 0 (or the server's `latencyMs`). */
  delayMs?: number;
}

/** An HTTP error in OpenAI's JSON shape. */
export interface FakeErrorStep extends StepScope {
  error: {
    status: number;
    message?: string;
    type?: string;
    code?: string | null;
    param?: string | null;
    /** Seconds, sent as the `retry-after` header. */
    retryAfter?: number;
    /** Milliseconds, sent as the `retry-after-ms` header. */
    retryAfterMs?: number;
    /**
     * Usage the provider had counted before failing, sent beside the error (with the call's `id`) and
     * billed when the server bills the model: a failed leg that still costs money.
     */
    usage?: Record<string, unknown>;
  };
}

/** Never finishes the response until the client goes away. With `text`, streams it first. */
export interface FakeHangStep extends StepScope {
  hang: true;
  text?: string;
}

/** Streams (optional `text`, then) a chunk of broken JSON and ends. */
export interface FakeMalformedStep extends StepScope {
  malformed: true;
  text?: string;
}

/** Streams (optional `text`) and ends without a finish_reason or `[DONE]`. */
export interface FakeTruncatedStep extends StepScope {
  truncated: true;
  text?: string;
}

/**
 * Streams (optional `text`, then) an error event in the stream (OpenRouter's mid-stream error: a
 * chunk with `error`), with the `usage` the provider had counted when given (billed then), and ends.
 */
export interface FakeStreamErrorStep extends StepScope {
  streamError: { message: string; code?: string | number };
  text?: string;
  usage?: Record<string, unknown>;
}

export type FakeStep =
  FakeReplyStep | FakeErrorStep | FakeHangStep | FakeMalformedStep | FakeTruncatedStep | FakeStreamErrorStep;

/** A request the server received on POST /v1/chat/completions. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body (undefined when it did not parse). */
  body: ChatBody | undefined;
  model: string;
  stream: boolean;
  /** The step the server answered with (after resolution), for assertions. */
  step: FakeStep;
  /**
   * `performance.now()` when the first non-empty text delta of a streamed reply was written
   * (benchmarks: the daemon's share of time to first token starts here).
   */
  firstTextAt?: number;
}

/** The subset of the request body the fake understands; everything else is kept as-is. */
export interface ChatBody {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: { role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }[];
  tools?: unknown[];
  [k: string]: unknown;
}

export interface FakeOpenAIOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get a 401. */
  apiKey?: string;
  /** Listening port; 0 (default) picks a free one. */
  port?: number;
  /** Added before the first byte of every reply and between streamed chunks (benchmarks). */
  latencyMs?: number;
  /** Models listed by GET /v1/models. */
  models?: string[];
  /** Keep at most this many recorded requests (benchmarks); default unlimited. */
  maxRecorded?: number;
  /** Bill each reply of the models it names, in their shape (fake-billing.ts). */
  billing?: FakeBilling;
}

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  port: number;
  requests: RecordedRequest[];
  enqueue(...steps: FakeStep[]): void;
  setHandler(fn: ((req: RecordedRequest) => FakeStep | undefined) | undefined): void;
  /** Clears the queue, the handler and the recorded requests. */
  reset(): void;
  /** Number of steps still queued. */
  pending(): number;
  close(): Promise<void>;
}

const enc = (v: unknown): string => `data: ${JSON.stringify(v)}\n\n`;

/** Rough token estimate (4 chars per token) so default usage looks realistic. */
function estimateTokens(s: string): number {
  return Math.max(1, Math.ceil(s.length / 4));
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((p) => (p && typeof p === "object" && "text" in p ? String((p as { text: unknown }).text) : ""))
      .join("");
  return "";
}

/** The text of the last user message of a request body ("" when there is none). */
function lastUserText(body: ChatBody | undefined): string {
  const msgs = body?.messages ?? [];
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i]?.role === "user") return textOf(msgs[i]?.content);
  return "";
}

/** The text of the last user message a recorded request sent ("" when there is none). */
export const lastUserOf = (req: RecordedRequest | undefined): string => lastUserText(req?.body);

function promptTokens(body: ChatBody | undefined): number {
  let n = 0;
  for (const m of body?.messages ?? []) n += 4 + estimateTokens(textOf(m.content));
  return n + (body?.tools?.length ?? 0) * 40;
}

function defaultUsage(body: ChatBody | undefined, step: FakeReplyStep): Record<string, unknown> {
  const prompt = promptTokens(body);
  const args = (step.toolCalls ?? []).map((c) => argString(c.arguments)).join("");
  const reasoning = step.reasoning ? estimateTokens(step.reasoning) : 0;
  const completion = estimateTokens((step.text ?? "") + args) + reasoning;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0 },
  };
}

function argString(a: string | object): string {
  return typeof a === "string" ? a : JSON.stringify(a);
}

function chunks(s: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

const ERROR_DEFAULTS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: "Invalid request.", type: "invalid_request_error", code: null },
  401: {
    message:
      "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
    type: "invalid_request_error",
    code: "invalid_api_key",
  },
  403: { message: "You are not allowed to access this model.", type: "invalid_request_error", code: null },
  404: {
    message: "The model does not exist or you do not have access to it.",
    type: "invalid_request_error",
    code: "model_not_found",
  },
  429: {
    message: "Rate limit reached for requests. Please try again later.",
    type: "requests",
    code: "rate_limit_exceeded",
  },
  500: {
    message: "The server had an error while processing your request. Sorry about that!",
    type: "server_error",
    code: null,
  },
  503: {
    message: "The engine is currently overloaded, please try again later.",
    type: "server_error",
    code: null,
  },
};

/** The real shape OpenAI returns for a prompt longer than the model's window. */
export function contextOverflowStep(model?: string): FakeErrorStep {
  return {
    ...(model ? { model } : {}),
    error: {
      status: 400,
      message:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  };
}

/** Starts the fake server. */
export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  let queue: FakeStep[] = [];
  let handler: ((req: RecordedRequest) => FakeStep | undefined) | undefined;
  const requests: RecordedRequest[] = [];
  let seq = 0;
  const latency = opts.latencyMs ?? 0;
  const wait = (ms: number): Promise<void> =>
    ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();

  const takeStep = (model: string): FakeStep | undefined => {
    const i = queue.findIndex((s) => s.model === undefined || s.model === model);
    if (i < 0) return undefined;
    const [s] = queue.splice(i, 1);
    return s;
  };

  const sendError = (
    res: ServerResponse,
    e: FakeErrorStep["error"],
    billed?: { id: string; usage: Record<string, unknown> },
  ): void => {
    const d = ERROR_DEFAULTS[e.status] ?? ERROR_DEFAULTS[e.status >= 500 ? 500 : 400]!;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-request-id": `req_${++seq}`,
    };
    if (e.retryAfter !== undefined) headers["retry-after"] = String(e.retryAfter);
    if (e.retryAfterMs !== undefined) headers["retry-after-ms"] = String(e.retryAfterMs);
    res.writeHead(e.status, headers);
    res.end(
      JSON.stringify({
        error: {
          message: e.message ?? d.message,
          type: e.type ?? d.type,
          param: e.param ?? null,
          code: e.code === undefined ? d.code : e.code,
        },
        ...(billed ?? {}),
      }),
    );
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, { status: 500, message: `fake server bug: ${String(err)}` });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    const raw = await readBody(req);
    const authOk = opts.apiKey === undefined || req.headers.authorization === `Bearer ${opts.apiKey}`;

    if (req.method === "GET" && path === "/v1/models") {
      if (!authOk) return sendError(res, { status: 401 });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          object: "list",
          data: (opts.models ?? ["gpt-4o-mini", "gpt-4o"]).map((id) => ({
            id,
            object: "model",
            created: 1_700_000_000,
            owned_by: "fake",
          })),
        }),
      );
      return;
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      return sendError(res, {
        status: 404,
        message: `Unknown request URL: ${req.method} ${path}.`,
        code: "unknown_url",
      });
    }

    let body: ChatBody | undefined;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as ChatBody;
    } catch {
      body = undefined;
    }
    const model = typeof body?.model === "string" ? body.model : "";
    const stream = body?.stream === true;
    const record: RecordedRequest = {
      method: req.method,
      path,
      headers: { ...req.headers },
      body,
      model,
      stream,
      step: { text: "" },
    };
    requests.push(record);
    if (opts.maxRecorded !== undefined && requests.length > opts.maxRecorded) requests.shift();

    if (!authOk) {
      record.step = { error: { status: 401 } };
      return sendError(res, record.step.error);
    }
    if (!body) {
      record.step = { error: { status: 400, message: "We could not parse the JSON body of your request." } };
      return sendError(res, record.step.error);
    }

    const step: FakeStep = takeStep(model) ?? handler?.(record) ?? { text: `echo: ${lastUserText(body)}` };
    record.step = step;
    await wait(latency);

    if ("error" in step) {
      const counted = step.error.usage;
      if (!counted) return sendError(res, step.error);
      // Counted before it failed: billed like a reply (with no reply text), and said in the body.
      const id = `chatcmpl-fake${++seq}`;
      const billed = opts.billing?.models[model];
      const usage =
        billed && opts.billing
          ? billReply(opts.billing, billed.shape, id, model, body, { text: "" }, [], counted)
          : counted;
      return sendError(res, step.error, usage ? { id, usage } : undefined);
    }
    const id = `chatcmpl-fake${++seq}`;
    const created = Math.floor(Date.now() / 1000);
    const base = { id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_fake" };
    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
      enc({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(includeUsage ? { usage: null } : {}),
      });

    if ("streamError" in step) {
      const billed = opts.billing?.models[model];
      const usage =
        step.usage && billed && opts.billing
          ? billReply(opts.billing, billed.shape, id, model, body, { text: step.text ?? "" }, [], step.usage)
          : step.usage;
      res.writeHead(200, sseHeaders(seq));
      res.write(chunk({ role: "assistant", content: "" }));
      for (const piece of chunks(step.text ?? "", 8)) res.write(chunk({ content: piece }));
      res.end(
        enc({
          ...base,
          error: step.streamError,
          choices: [{ index: 0, delta: { content: "" }, finish_reason: "error" }],
          ...(usage ? { usage } : {}),
        }),
      );
      return;
    }
    if ("hang" in step || "malformed" in step || "truncated" in step) {
      if (!stream && "hang" in step) {
        // Non-streaming hang: headers never arrive.
        await untilClosed(req, res);
        return;
      }
      res.writeHead(200, sseHeaders(seq));
      res.write(chunk({ role: "assistant", content: "" }));
      for (const piece of chunks(step.text ?? "", 8)) res.write(chunk({ content: piece }));
      if ("hang" in step) {
        await untilClosed(req, res);
        return;
      }
      if ("malformed" in step)
        res.write(
          `data: {"id":"${id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"oops\n\n`,
        );
      res.end();
      return;
    }

    const reply = step;
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_fake${seq}_${i}`,
      name: c.name,
      arguments: argString(c.arguments),
    }));
    const finish = reply.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop");
    let usage = reply.usage === false ? undefined : (reply.usage ?? defaultUsage(body, reply));
    const billed = opts.billing?.models[model];
    if (billed && opts.billing)
      usage = billReply(opts.billing, billed.shape, id, model, body, reply, toolCalls, usage);

    if (!stream) {
      res.writeHead(200, { "content-type": "application/json", "x-request-id": `req_${seq}` });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          system_fingerprint: "fp_fake",
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: reply.text ?? (toolCalls.length > 0 ? null : ""),
                refusal: null,
                ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
                ...(toolCalls.length > 0
                  ? {
                      tool_calls: toolCalls.map((c) => ({
                        id: c.id,
                        type: "function",
                        function: { name: c.name, arguments: c.arguments },
                      })),
                    }
                  : {}),
              },
              logprobs: null,
              finish_reason: finish,
            },
          ],
          ...(usage ? { usage } : {}),
        }),
      );
      return;
    }

    const size = Math.max(1, reply.chunkSize ?? 8);
    const delay = reply.delayMs ?? latency;
    res.writeHead(200, sseHeaders(seq));
    const out: string[] = [chunk({ role: "assistant", content: "", refusal: null })];
    for (const piece of chunks(reply.reasoning ?? "", size)) out.push(chunk({ reasoning_content: piece }));
    for (const piece of chunks(reply.text ?? "", size)) out.push(chunk({ content: piece }));
    toolCalls.forEach((c, index) => {
      // The first delta of a call carries id, type and name; later ones only argument fragments.
      out.push(
        chunk({
          tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }],
        }),
      );
      for (const piece of chunks(c.arguments, size))
        out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    out.push(chunk({}, finish));
    if (includeUsage && usage) out.push(enc({ ...base, choices: [], usage }));
    out.push("data: [DONE]\n\n");
    // The role chunk comes first, then reasoning; the first text delta follows them.
    const firstText = reply.text ? 1 + chunks(reply.reasoning ?? "", size).length : -1;
    if (delay <= 0) {
      if (firstText >= 0) record.firstTextAt = performance.now();
      res.end(out.join(""));
      return;
    }
    // Paced between parts, and ended right after `[DONE]` like a real server: the SDK (openai 7)
    // stops reading at `[DONE]`, so a pause before the end would count as a request still in flight.
    for (const [i, part] of out.entries()) {
      if (res.destroyed) return;
      if (i === out.length - 1) {
        res.end(part);
        return;
      }
      if (i === firstText) record.firstTextAt = performance.now();
      res.write(part);
      await wait(delay);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    enqueue: (...steps) => void queue.push(...steps),
    setHandler: (fn) => void (handler = fn),
    reset: () => {
      queue = [];
      handler = undefined;
      requests.length = 0;
    },
    pending: () => queue.length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sseHeaders(seq: number): Record<string, string> {
  return {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-request-id": `req_${seq}`,
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

/** Resolves when the client disconnects (or the server closes the socket). */
function untilClosed(req: IncomingMessage, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed || req.socket.destroyed) return resolve();
    res.once("close", () => resolve());
  });
}

function parseArgs(argv: string[]): { port: number; latencyMs: number; apiKey?: string } {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const port = Number(get("--port") ?? 0);
  const latencyMs = Number(get("--latency-ms") ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error("--port expects an integer 0-65535");
  if (!Number.isFinite(latencyMs) || latencyMs < 0) throw new Error("--latency-ms expects a number >= 0");
  const apiKey = get("--api-key");
  return { port, latencyMs, ...(apiKey ? { apiKey } : {}) };
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const args = parseArgs(process.argv.slice(2));
  const fake = await startFakeOpenAI({ ...args, maxRecorded: 100 });
  process.stdout.write(`${fake.baseUrl}\n`);
  const stop = (): void => void fake.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

/** Bills one reply in its model's shape; returns the usage object to send (none for `nothing`). */
function billReply(
  billing: FakeBilling,
  shape: "reported" | "tokens" | "nothing",
  id: string,
  model: string,
  body: ChatBody,
  reply: FakeReplyStep,
  toolCalls: { name: string; arguments: string }[],
  usage: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (shape === "nothing" || !usage) {
    const out =
      (reply.text ?? "").length +
      (reply.reasoning ?? "").length +
      toolCalls.reduce((a, c) => a + c.name.length + c.arguments.length, 0);
    billing.bill({
      id,
      model,
      input: Math.ceil(requestChars(body) / 4),
      cached: 0,
      output: Math.ceil(out / 4),
      reasoning: 0,
    });
    return undefined;
  }
  const n = (v: unknown): number => (typeof v === "number" ? v : 0);
  const details = (usage.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const outDetails = (usage.completion_tokens_details ?? {}) as Record<string, unknown>;
  const cost = billing.bill({
    id,
    model,
    input: n(usage.prompt_tokens),
    cached: n(details.cached_tokens),
    output: n(usage.completion_tokens),
    reasoning: n(outDetails.reasoning_tokens),
  });
  return shape === "reported" ? { ...usage, cost } : usage;
}
