/**
 * A provider over the official `openai` SDK (v6) for any OpenAI-compatible endpoint.
 *
 * - Streams by default with `stream_options.include_usage`, so usage arrives while streaming.
 * - Tool-call deltas are assembled by `index` and emitted complete after the stream ended; a provider
 *   that reuses index 0 for several calls (some Gemini/OpenRouter proxies) is handled by its changing id.
 * - `reasoning_content` (DeepSeek, vLLM, Qwen) and `reasoning` (OpenRouter, Ollama) become thinking deltas.
 * - The SDK never retries (`maxRetries: 0`): the router owns retries, fallbacks and cooldowns.
 * - `timeoutMs` bounds the wait for the first byte AND every silence between chunks, so a long answer
 *   that keeps streaming is never cut while a stalled one is.
 * - The SDK is imported on first use so daemon start-up does not pay for it.
 */
import type { ChatMessage, ModelRequest, ModelStreamEvent, ToolCall, ToolSpec } from "./types.js";
import { ModelError } from "./types.js";
import { classifyModelError } from "./classify-error.js";
import { normalizeUsage } from "./normalize-usage.js";
import type OpenAIType from "openai";

/** A request to one provider: `model` is the provider-local id (the part after `<provider>/`). */
export interface ProviderRequest extends Omit<ModelRequest, "model"> {
  model: string;
}

/** Something that can stream one model call of one provider. */
export interface Provider {
  readonly name: string;
  stream(req: ProviderRequest): AsyncIterable<ModelStreamEvent>;
}

export interface OpenAIProviderOptions {
  /** Provider name as configured (`models.providers.<name>`), used in events and errors. */
  name: string;
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** First-byte and inactivity timeout in ms. */
  timeoutMs: number;
}

type OpenAIClient = OpenAIType;
type ChatParam = OpenAIType.ChatCompletionMessageParam;
type Chunk = OpenAIType.ChatCompletionChunk;

let sdk: Promise<typeof import("openai")> | undefined;
const loadSdk = (): Promise<typeof import("openai")> => (sdk ??= import("openai"));

/** Converts our messages to the SDK's parameter shape. */
export function toOpenAIMessages(messages: ChatMessage[]): ChatParam[] {
  return messages.map((m): ChatParam => {
    switch (m.role) {
      case "system":
        return { role: "system", content: m.content };
      case "user":
        return { role: "user", content: m.content };
      case "tool":
        return { role: "tool", content: m.content, tool_call_id: m.tool_call_id };
      case "assistant":
        return m.tool_calls && m.tool_calls.length > 0
          ? {
              role: "assistant",
              content: m.content === "" ? null : m.content,
              tool_calls: m.tool_calls.map((c) => ({
                id: c.id,
                type: "function" as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : { role: "assistant", content: m.content };
    }
  });
}

function toOpenAITools(tools: ToolSpec[]): OpenAIType.ChatCompletionTool[] {
  return tools.map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

/** Serialized `tools` per tool-spec array: the registry hands out the same array until tools change. */
const toolsJson = new WeakMap<ToolSpec[], string>();

function toolsJsonOf(tools: ToolSpec[]): string {
  let json = toolsJson.get(tools);
  if (json === undefined) {
    json = JSON.stringify(toOpenAITools(tools));
    toolsJson.set(tools, json);
  }
  return json;
}

/**
 * The JSON body of a streamed chat completion, keys in the order the SDK's `create` would send them.
 * `max_completion_tokens` on api.openai.com (which rejects `max_tokens` for newer models), `max_tokens`
 * elsewhere.
 */
export function requestBody(req: ProviderRequest, officialHost: boolean): string {
  const head = JSON.stringify({
    model: req.model,
    messages: toOpenAIMessages(req.messages),
    stream: true,
    stream_options: { include_usage: true },
  });
  const tools = req.tools && req.tools.length > 0 ? `,"tools":${toolsJsonOf(req.tools)}` : "";
  const tail = JSON.stringify({
    ...(req.maxTokens !== undefined
      ? officialHost
        ? { max_completion_tokens: req.maxTokens }
        : { max_tokens: req.maxTokens }
      : {}),
    ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
  });
  return `${head.slice(0, -1)}${tools}${tail === "{}" ? "" : `,${tail.slice(1, -1)}`}}`;
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** Creates a provider. Construction is free; the SDK client is built on the first call. */
export function createOpenAIProvider(opts: OpenAIProviderOptions): Provider {
  let client: OpenAIClient | undefined;
  const officialHost = /(^|\.)api\.openai\.com$/i.test(safeHost(opts.baseUrl));

  async function getClient(): Promise<OpenAIClient> {
    if (client) return client;
    const { default: OpenAI } = await loadSdk();
    client = new OpenAI({
      baseURL: opts.baseUrl,
      // Local servers (Ollama, llama.cpp) need no key; the SDK insists on one, and must never pick up
      // OPENAI_API_KEY from the environment behind the config's back.
      apiKey: opts.apiKey ?? "no-key",
      defaultHeaders: opts.headers ?? {},
      maxRetries: 0,
      timeout: opts.timeoutMs,
      logLevel: "off",
    });
    return client;
  }

  async function* stream(req: ProviderRequest): AsyncGenerator<ModelStreamEvent> {
    const origin = { provider: opts.name, model: req.model, baseUrl: opts.baseUrl };
    if (req.signal?.aborted)
      throw new ModelError("MODEL_ABORTED", `request to ${opts.name}/${req.model} was aborted`, origin);
    const c = await getClient();
    const ac = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      // Once per chunk: refresh() re-arms the same timer instead of allocating a new one.
      if (timer) {
        timer.refresh();
        return;
      }
      timer = setTimeout(() => {
        timedOut = true;
        ac.abort(new Error("timeout"));
      }, opts.timeoutMs);
    };
    const onAbort = (): void => ac.abort(req.signal?.reason);
    req.signal?.addEventListener("abort", onAbort, { once: true });
    const fail = (err: unknown): ModelError => {
      if (req.signal?.aborted)
        return new ModelError("MODEL_ABORTED", `request to ${opts.name}/${req.model} was aborted`, {
          ...origin,
          cause: err,
        });
      if (timedOut)
        return new ModelError(
          "MODEL_TIMEOUT",
          `${opts.name}/${req.model} sent nothing for ${Math.round(opts.timeoutMs / 100) / 10}s`,
          { ...origin, cause: err },
        );
      return classifyModelError(err, origin);
    };

    const calls: PartialCall[] = [];
    const byIndex = new Map<number, PartialCall>();
    let finishReason: string | undefined;
    let rawUsage: unknown;
    /** The body was read to its end: nothing to stop, and an abort would cost a DOMException per call. */
    let drained = false;
    try {
      arm();
      let iter: AsyncIterable<Chunk>;
      try {
        // The body goes as a string we build: the tool specs (most of its bytes) are serialized once
        // per tool set, not on every call. Same request as `chat.completions.create` would send.
        iter = await c.post<AsyncIterable<Chunk>>("/chat/completions", {
          body: requestBody(req, officialHost),
          headers: { "content-type": "application/json" },
          stream: true,
          signal: ac.signal,
          timeout: opts.timeoutMs,
        });
      } catch (err) {
        throw fail(err);
      }
      const it = iter[Symbol.asyncIterator]();
      for (;;) {
        let r: IteratorResult<Chunk>;
        try {
          r = await it.next();
        } catch (err) {
          throw fail(err);
        }
        if (r.done) {
          drained = true;
          break;
        }
        arm();
        const chunk = r.value;
        if (chunk.usage) rawUsage = chunk.usage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = (choice.delta ?? {}) as Chunk["choices"][number]["delta"] & {
          reasoning_content?: unknown;
          reasoning?: unknown;
        };
        const thinking =
          typeof delta.reasoning_content === "string"
            ? delta.reasoning_content
            : typeof delta.reasoning === "string"
              ? delta.reasoning
              : "";
        if (thinking) yield { type: "thinking", delta: thinking };
        if (typeof delta.content === "string" && delta.content) yield { type: "text", delta: delta.content };
        for (const tc of delta.tool_calls ?? []) {
          let cur = byIndex.get(tc.index);
          if (!cur || (tc.id && cur.id && tc.id !== cur.id && cur.name)) {
            cur = { id: tc.id ?? "", name: "", args: "" };
            byIndex.set(tc.index, cur);
            calls.push(cur);
          }
          if (tc.id) cur.id = tc.id;
          if (tc.function?.name) cur.name += tc.function.name;
          if (tc.function?.arguments) cur.args += tc.function.arguments;
        }
        if (choice.finish_reason) finishReason = choice.finish_reason;
      }
      // The SDK ends quietly when its signal aborts; turn that into the right error.
      if (ac.signal.aborted) throw fail(ac.signal.reason);
      if (finishReason === undefined)
        throw new ModelError(
          "MODEL_BAD_STREAM",
          `${opts.name}/${req.model} ended the stream without a finish reason (truncated)`,
          origin,
        );
      for (const [i, call] of calls.entries()) {
        if (!call.name)
          throw new ModelError(
            "MODEL_BAD_STREAM",
            `${opts.name}/${req.model} sent a tool call without a name`,
            origin,
          );
        const out: ToolCall = {
          id: call.id || `call_${Date.now().toString(36)}_${i}`,
          name: call.name,
          arguments: call.args.trim() === "" ? "{}" : call.args,
        };
        yield { type: "tool_call", call: out };
      }
      if (rawUsage !== undefined) yield { type: "usage", usage: normalizeUsage(rawUsage), raw: rawUsage };
      yield {
        type: "done",
        finishReason: calls.length > 0 && finishReason === "stop" ? "tool_calls" : finishReason,
        provider: opts.name,
        model: req.model,
      };
    } finally {
      if (timer) clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
      // Stops the HTTP body if the consumer stopped early or the stream failed.
      if (!drained && !ac.signal.aborted) ac.abort();
    }
  }

  return { name: opts.name, stream };
}

function safeHost(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}
