/**
 * Model-facing types. Messages follow the OpenAI chat shape because every provider we reach speaks it.
 */

/** A content part of a user message (text or image for vision models). */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } };

/** A tool call as the model emitted it; `arguments` is the raw JSON string. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A message sent to the model. */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ContentPart[] }
  | { role: "assistant"; content: string; tool_calls?: ToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string; name?: string };

/** JSON-schema description of a tool for the model. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export { ZERO_USAGE, type Usage } from "../core/usage.js";
import type { Usage } from "../core/usage.js";

/** One model call. */
export interface ModelRequest {
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** `<provider>/<model>`; the router's primary chain when absent. */
  model?: string;
  maxTokens?: number;
  temperature?: number;
  signal?: AbortSignal;
  /** The agent making the call: its own `context_window` counts when the model has none stated. */
  agentId?: string;
  /** OpenAI `tool_choice` (a client's `/v1` request): sent as is. */
  toolChoice?: ToolChoice;
  /** OpenAI `response_format` (JSON mode, JSON schema): sent as is. */
  responseFormat?: ResponseFormat;
  /** OpenAI `parallel_tool_calls`, when a client set it. */
  parallelToolCalls?: boolean;
  /** Told of every failed attempt the router retries or falls back from (the turn's trace). */
  onRetry?: (r: ModelRetry) => void;
  /**
   * Told of a failed attempt the provider had already counted tokens for (a stream that broke after
   * its usage arrived): billed, so it goes in the ledger even though it answered nothing.
   */
  onBilled?: (b: BilledAttempt) => void;
}

/** What a provider reported about one call's bill, beside the counts. */
export interface CallBill {
  /** The provider's own figure in USD (OpenRouter `usage.cost`, LiteLLM `x-litellm-response-cost`). */
  cost?: number;
  /** True when the provider reported no counts and they were estimated from the text. */
  estimated?: boolean;
  /** The provider's id of the call (`chatcmpl-...`, OpenRouter `gen-...`), for reconciling. */
  callId?: string;
}

/** A failed attempt that was billed. */
export interface BilledAttempt extends CallBill {
  provider: string;
  model: string;
  usage: Usage;
  code: string;
}

/** A model attempt that failed and was followed by another (same model after a wait, or a fallback). */
export interface ModelRetry {
  /** `<provider>/<model>` of the failed attempt. */
  model: string;
  code: string;
  message: string;
  /** 1 for the first attempt of this model. */
  attempt: number;
  /** `retry`: the same model again after `waitMs`; `fallback`: the next model of the chain. */
  next: "retry" | "fallback";
  waitMs: number;
  /** The model tried next, for a fallback. */
  fallback?: string;
  /** From the attempt's start to the next attempt (its wait included). */
  durationMs: number;
}

export type { ToolChoice, ResponseFormat } from "../core/client-request.js";
import type { ToolChoice, ResponseFormat } from "../core/client-request.js";

/** Events of one streamed model call, in order; exactly one `done` ends a successful stream. */
export type ModelStreamEvent =
  | { type: "text"; delta: string }
  | { type: "thinking"; delta: string }
  /** Emitted once per call, complete, after the stream finished assembling it. */
  | { type: "tool_call"; call: ToolCall }
  | ({ type: "usage"; usage: Usage; raw: unknown } & CallBill)
  | { type: "done"; finishReason: string; provider: string; model: string };

/** Anything that can answer a model request: a provider, the echo model, or the router. */
export interface ModelClient {
  stream(req: ModelRequest): AsyncIterable<ModelStreamEvent>;
}

/** Classified model error codes. `*_UNREACHABLE` = could not talk to it; others = it refused. */
export type ModelErrorCode =
  | "MODEL_AUTH" // 401/403: fail fast
  | "MODEL_BAD_REQUEST" // 400/404/422: fail fast
  | "MODEL_CONTEXT_OVERFLOW" // prompt too long: compact and retry
  | "MODEL_RATE_LIMIT" // 429
  | "MODEL_SERVER" // 5xx
  | "MODEL_TIMEOUT"
  | "MODEL_UNREACHABLE" // connection refused / DNS / reset
  | "MODEL_BAD_STREAM" // malformed or truncated stream
  | "MODEL_ABORTED"
  | "MODEL_NOT_CONFIGURED"
  | "MODEL_ALL_FAILED";

/** A typed model error. `retryAfterMs` carries the provider's `retry-after`. */
export class ModelError extends Error {
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    readonly info: {
      provider?: string | undefined;
      model?: string | undefined;
      /** The provider's base_url without secrets. */
      baseUrl?: string;
      status?: number;
      retryAfterMs?: number;
      cause?: unknown;
      /** Set when the provider had counted tokens before the failure (see `onBilled`). */
      billed?: { usage: Usage } & CallBill;
    } = {},
  ) {
    super(message, { cause: info.cause });
    this.name = "ModelError";
  }
  /** True for errors worth retrying or falling back on. */
  get transient(): boolean {
    return [
      "MODEL_RATE_LIMIT",
      "MODEL_SERVER",
      "MODEL_TIMEOUT",
      "MODEL_UNREACHABLE",
      "MODEL_BAD_STREAM",
    ].includes(this.code);
  }
}
