/**
 * A provider for any OpenAI-compatible endpoint: streamed chat completions over undici's dispatcher
 * with a keep-alive connection pool, parsed as server-sent events (sse-call.ts).
 *
 * - Streams by default with `stream_options.include_usage`, so usage arrives while streaming.
 * - Tool-call deltas are assembled by `index` and emitted complete after the stream ended; a provider
 *   that reuses index 0 for several calls (some Gemini/OpenRouter proxies) is handled by its changing id.
 * - `reasoning_content` (DeepSeek, vLLM, Qwen) and `reasoning` (OpenRouter, Ollama) become thinking deltas.
 * - Never retries: the router owns retries, fallbacks and cooldowns.
 * - `timeoutMs` bounds the wait for the first byte AND every silence between bytes, so a long answer
 *   that keeps streaming is never cut while a stalled one is.
 * - The request (URL, headers, body) and the errors are the ones the `openai` SDK sent and threw, so
 *   the error classifier and the providers see no difference; the SDK itself is no longer on this
 *   path (it cost ~0.7 ms of CPU per call in `fetch`, web streams and its own iterators). undici is
 *   imported on first use so daemon start-up does not pay for it.
 */
import type OpenAIType from "openai";
import type { CallBill, ModelStreamEvent, ToolCall } from "./types.js";
import { ModelError } from "./types.js";
import { classifyModelError } from "./classify-error.js";
import { normalizeUsage } from "./normalize-usage.js";
import { requestBody, type ProviderRequest } from "./chat-request-body.js";
import { ProviderHttpError, SseCall } from "./sse-call.js";
import { endpointOf, headersOf, loadTransport, type Transport } from "./provider-transport.js";
import { billOf, estimatedUsage } from "./provider-bill.js";

export { requestBody, toOpenAIMessages, type ProviderRequest } from "./chat-request-body.js";

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

type Chunk = OpenAIType.ChatCompletionChunk;

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** Creates a provider. Construction is free; the HTTP client is loaded on the first call. */
export function createOpenAIProvider(opts: OpenAIProviderOptions): Provider {
  const officialHost = /(^|\.)api\.openai\.com$/i.test(safeHost(opts.baseUrl));
  const headers = headersOf(opts.apiKey, opts.headers);
  let endpoint: { origin: string; path: string } | undefined;

  async function* stream(req: ProviderRequest): AsyncGenerator<ModelStreamEvent> {
    const origin = { provider: opts.name, model: req.model, baseUrl: opts.baseUrl };
    const aborted = (err?: unknown): ModelError =>
      new ModelError("MODEL_ABORTED", `request to ${opts.name}/${req.model} was aborted`, {
        ...origin,
        ...(err !== undefined ? { cause: err } : {}),
      });
    if (req.signal?.aborted) throw aborted();
    let t: Transport;
    try {
      t = await loadTransport();
      endpoint ??= endpointOf(opts.baseUrl);
    } catch (err) {
      throw classifyModelError(err, origin);
    }
    if (req.signal?.aborted) throw aborted();
    let call: SseCall | undefined;
    let timedOut = false;
    // One timer per call, re-armed with refresh() whenever bytes arrive.
    const timer = setTimeout(() => {
      timedOut = true;
      call?.abort(new Error("timeout"));
    }, opts.timeoutMs);
    const onAbort = (): void => {
      const reason: unknown = req.signal?.reason;
      call?.abort(reason instanceof Error ? reason : new Error("aborted"));
    };
    req.signal?.addEventListener("abort", onAbort, { once: true });
    const fail = (err: unknown): ModelError => {
      if (req.signal?.aborted) return aborted(err);
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
    let callId: string | undefined;
    let replyChars = 0;
    let sawDone = false;
    try {
      try {
        call = new SseCall({
          dispatcher: t.dispatcher,
          origin: endpoint.origin,
          path: endpoint.path,
          headers,
          body: requestBody(req, officialHost),
          onActivity: () => timer.refresh(),
          parseHeaders: t.parseHeaders,
        });
      } catch (err) {
        throw fail(err);
      }
      while (!sawDone) {
        let batch: Awaited<ReturnType<SseCall["next"]>>;
        try {
          batch = await call.next();
        } catch (err) {
          // A refusal whose body reports usage (the provider counted the prompt before failing).
          if (err instanceof ProviderHttpError && err.billed) {
            rawUsage = err.billed.usage;
            callId ??= err.billed.id;
          }
          throw fail(err);
        }
        if (batch === null) break;
        for (const item of batch) {
          // Stopped while the consumer held an earlier event: nothing more from this stream.
          if (timedOut || req.signal?.aborted) throw fail(new Error("stopped"));
          const data = typeof item === "string" ? item : item.data;
          if (data === "[DONE]") {
            sawDone = true;
            break;
          }
          const event = typeof item === "string" ? "" : item.event;
          let chunk: Chunk & { error?: unknown };
          try {
            chunk = JSON.parse(data) as Chunk & { error?: unknown };
          } catch {
            // The SDK's error for the same case, so the classifier and the log read it as before.
            throw fail(new SyntaxError("Error reading response: malformed server-sent event JSON."));
          }
          if (event.startsWith("thread.") || !chunk || typeof chunk !== "object") continue;
          // Before the error check: an error event may carry the usage the provider billed.
          if (chunk.usage) rawUsage = chunk.usage;
          if (event === "error")
            throw fail(new ProviderHttpError(undefined, chunk?.error ?? chunk, undefined));
          if (chunk?.error) throw fail(new ProviderHttpError(undefined, chunk.error, undefined));
          if (callId === undefined && typeof chunk.id === "string" && chunk.id) callId = chunk.id;
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
          if (typeof delta.content === "string" && delta.content) {
            replyChars += delta.content.length;
            yield { type: "text", delta: delta.content };
          }
          replyChars += thinking.length;
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
      }
      if (timedOut || req.signal?.aborted) throw fail(new Error("stopped"));
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
      const bill: CallBill = billOf(rawUsage, call.header("x-litellm-response-cost"), callId);
      if (rawUsage !== undefined)
        yield { type: "usage", usage: normalizeUsage(rawUsage), raw: rawUsage, ...bill };
      else {
        // No counts from the provider: estimated from the text sent and received, and marked so.
        for (const c of calls) replyChars += c.name.length + c.args.length;
        yield {
          type: "usage",
          usage: estimatedUsage(req, replyChars),
          raw: undefined,
          ...bill,
          estimated: true,
        };
      }
      yield {
        type: "done",
        finishReason: calls.length > 0 && finishReason === "stop" ? "tool_calls" : finishReason,
        provider: opts.name,
        model: req.model,
      };
    } catch (err) {
      // The provider had counted this call before it failed: the error carries the bill (onBilled).
      if (rawUsage !== undefined && err instanceof ModelError)
        err.info.billed = {
          usage: normalizeUsage(rawUsage),
          ...billOf(rawUsage, call?.header("x-litellm-response-cost"), callId),
        };
      throw err;
    } finally {
      req.signal?.removeEventListener("abort", onAbort);
      if (call && !call.finished && sawDone && !timedOut && !req.signal?.aborted) {
        // `[DONE]` came just before the end of the body: let it end and keep the connection; the
        // timer (still armed) destroys it if the end does not come.
        call.release(() => clearTimeout(timer));
      } else {
        clearTimeout(timer);
        // The consumer stopped early or the stream failed: free the connection.
        if (call && !call.finished) call.abort(new Error("closed"));
      }
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
