/**
 * Embeddings through the `openai` SDK's `embeddings.create` against any OpenAI-compatible
 * `/v1/embeddings` (OpenAI, Ollama, vLLM, LM Studio...), with the model router's rules:
 * - transient failures (5xx, timeout, unreachable) are retried with backoff `500 ms * 2^attempt`
 *   (max 8 s, or the server's retry-after) up to `models.max_retries`; a 429 is not retried;
 * - then the model cools down `15 s * 2^(failures-1)` (max 10 min, at least the retry-after) and
 *   calls during the cooldown fail at once, so an outage never holds up a turn;
 * - auth and bad-request errors are not retried (retrying cannot help) but also cool down, so a
 *   revoked key is not hammered once per turn.
 * The owner sees one warning when the embedder goes down and one info line when it recovers.
 * Each successful call reports its token usage (for `familiar usage` and cost).
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { sleep, type Clock } from "../core/clock.js";
import { classifyModelError } from "../models/classify-error.js";
import type { ModelError } from "../models/types.js";
import type OpenAIType from "openai";

/** Why an embedding call did not happen or failed. */
export class EmbeddingError extends Error {
  constructor(
    readonly code: "EMBED_OFF" | "EMBED_COOLDOWN" | "EMBED_FAILED" | "EMBED_BAD_RESPONSE" | "EMBED_BUDGET",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "EmbeddingError";
  }
}

/** The identity of the vectors: a change of any part means every stored vector is stale. */
export function embeddingFingerprint(cfg: Config): string | undefined {
  const e = cfg.memory.embeddings;
  if (!e) return undefined;
  const p = cfg.models.providers[e.provider];
  return JSON.stringify([e.provider, p?.base_url ?? "", e.model, e.dimensions ?? null]);
}

export interface EmbedderOptions {
  config: () => Config;
  logger: Logger;
  clock: Clock;
  /**
   * Called after each successful call with the tokens the provider billed, what it was for and,
   * for a search a tool ran, the turn that caused it.
   */
  onUsage?: (
    provider: string,
    model: string,
    tokens: number,
    purpose: EmbedPurpose,
    cause?: EmbedCause,
  ) => void;
  /**
   * Called before each call with its texts: an embedding's cost is known in advance, so a budget can
   * refuse the call before it is made. Returns the notice of the limit it would cross, or undefined.
   */
  beforeCall?: (
    provider: string,
    model: string,
    texts: readonly string[],
    purpose: EmbedPurpose,
  ) => string | undefined;
  backoff?: { baseMs?: number; maxMs?: number };
  cooldown?: { baseMs?: number; maxMs?: number };
}

/** What an embedding call is for (the ledger's `embedding_<purpose>` cause). */
export type EmbedPurpose = "index" | "search" | "check";

/** The turn an embedding call was made for (a memory search a tool ran), for its ledger row. */
export interface EmbedCause {
  requestId?: string;
  sessionKey?: string;
  agentId?: string;
}

/** Current health of the embedder, for `familiar memory status`. */
export interface EmbedderHealth {
  state: "off" | "ok" | "cooldown";
  model?: string;
  until?: number;
  lastError?: string;
}

let sdk: Promise<typeof import("openai")> | undefined;
const loadSdk = (): Promise<typeof import("openai")> => (sdk ??= import("openai"));

/** Embeds texts with the configured model; see the module comment for retry and cooldown rules. */
export class Embedder {
  private client: { key: string; client: OpenAIType } | undefined;
  private coolUntil = 0;
  private failures = 0;
  private lastError: string | undefined;
  private down = false;

  constructor(private readonly opts: EmbedderOptions) {}

  /** True when `memory.embeddings` is configured. */
  enabled(): boolean {
    return this.opts.config().memory.embeddings !== undefined;
  }

  /** `<provider>/<model>` or undefined when off. */
  modelRef(): string | undefined {
    const e = this.opts.config().memory.embeddings;
    return e ? `${e.provider}/${e.model}` : undefined;
  }

  health(): EmbedderHealth {
    const ref = this.modelRef();
    if (!ref) return { state: "off" };
    const now = this.opts.clock.now();
    return {
      state: this.coolUntil > now ? "cooldown" : "ok",
      model: ref,
      ...(this.coolUntil > now ? { until: this.coolUntil } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** True while a failure keeps the embedder from being called. */
  coolingDown(): boolean {
    return this.coolUntil > this.opts.clock.now();
  }

  private async sdkClient(cfg: Config): Promise<OpenAIType> {
    const e = cfg.memory.embeddings;
    const p = e ? cfg.models.providers[e.provider] : undefined;
    if (!e || !p) throw new EmbeddingError("EMBED_OFF", "memory.embeddings is not configured");
    const timeout = Math.round((p.timeout_s ?? cfg.models.timeout_s) * 1000);
    const key = JSON.stringify([p.base_url, p.api_key, p.headers, timeout]);
    if (this.client?.key === key) return this.client.client;
    const { default: OpenAI } = await loadSdk();
    const client = new OpenAI({
      baseURL: p.base_url,
      // Local servers (Ollama) need no key; the SDK insists on one.
      apiKey: p.api_key ?? "none",
      defaultHeaders: p.headers,
      timeout,
      maxRetries: 0,
    });
    this.client = { key, client };
    return client;
  }

  /**
   * Embeds `texts` (one request; callers batch by `batch_size`). Throws {@link EmbeddingError}:
   * EMBED_OFF when not configured, EMBED_COOLDOWN during a cooldown, EMBED_FAILED after retries.
   */
  async embed(
    texts: string[],
    signal?: AbortSignal,
    purpose: EmbedPurpose = "index",
    cause?: EmbedCause,
  ): Promise<Float32Array[]> {
    const cfg = this.opts.config();
    const e = cfg.memory.embeddings;
    if (!e) throw new EmbeddingError("EMBED_OFF", "memory.embeddings is not configured");
    if (texts.length === 0) return [];
    // Before the cooldown and the call: a budget's refusal is not an outage of the provider.
    const refused = this.opts.beforeCall?.(e.provider, e.model, texts, purpose);
    if (refused) throw new EmbeddingError("EMBED_BUDGET", refused);
    const ref = `${e.provider}/${e.model}`;
    if (this.coolingDown())
      throw new EmbeddingError(
        "EMBED_COOLDOWN",
        `${ref} is cooling down after: ${this.lastError ?? "errors"}`,
      );
    const client = await this.sdkClient(cfg);
    const base = this.opts.backoff?.baseMs ?? 500;
    const max = this.opts.backoff?.maxMs ?? 8000;
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await client.embeddings.create(
          {
            model: e.model,
            input: texts,
            encoding_format: "float",
            ...(e.dimensions !== undefined ? { dimensions: e.dimensions } : {}),
          },
          signal ? { signal } : {},
        );
        const vectors = toVectors(res.data, texts.length, ref);
        this.recovered(ref);
        const tokens = res.usage?.prompt_tokens ?? res.usage?.total_tokens ?? 0;
        this.opts.onUsage?.(e.provider, e.model, tokens, purpose, cause);
        return vectors;
      } catch (raw) {
        if (raw instanceof EmbeddingError) {
          this.failed(ref, raw.message, undefined);
          throw raw;
        }
        const err = classifyModelError(raw, { provider: e.provider, model: e.model });
        if (err.code === "MODEL_ABORTED" || signal?.aborted) throw err;
        if (err.transient && err.code !== "MODEL_RATE_LIMIT" && attempt < cfg.models.max_retries) {
          const wait = Math.max(
            Math.min(base * 2 ** attempt, max),
            Math.min(err.info.retryAfterMs ?? 0, 60_000),
          );
          await sleep(this.opts.clock, wait, signal);
          continue;
        }
        this.failed(ref, err.message, err);
        throw new EmbeddingError("EMBED_FAILED", `embedding with ${ref} failed: ${err.message}`, {
          cause: err,
        });
      }
    }
  }

  private failed(ref: string, message: string, err: ModelError | undefined): void {
    this.failures++;
    const base = this.opts.cooldown?.baseMs ?? 15_000;
    const max = this.opts.cooldown?.maxMs ?? 600_000;
    const ms = Math.max(
      Math.min(base * 2 ** (this.failures - 1), max),
      Math.min(err?.info.retryAfterMs ?? 0, 3_600_000),
    );
    this.coolUntil = this.opts.clock.now() + ms;
    this.lastError = message;
    if (!this.down) {
      // Once per outage: every turn keeps working with keyword search meanwhile.
      this.down = true;
      this.opts.logger.warn(
        { module: "memory", model: ref, code: err?.code, cooldownMs: ms },
        `memory embeddings unavailable (${message}); memory_search falls back to keywords and missing vectors are filled in later`,
      );
    }
  }

  private recovered(ref: string): void {
    if (this.down)
      this.opts.logger.info({ module: "memory", model: ref }, "memory embeddings available again");
    this.down = false;
    this.failures = 0;
    this.coolUntil = 0;
    this.lastError = undefined;
  }
}

function toVectors(data: OpenAIType.Embedding[] | undefined, n: number, ref: string): Float32Array[] {
  if (!Array.isArray(data) || data.length !== n)
    throw new EmbeddingError(
      "EMBED_BAD_RESPONSE",
      `${ref} returned ${data?.length ?? 0} vectors for ${n} inputs`,
    );
  const out: Float32Array[] = new Array<Float32Array>(n);
  for (const d of data) {
    const v = d.embedding as unknown;
    if (!Array.isArray(v) || v.length === 0 || typeof d.index !== "number" || d.index < 0 || d.index >= n)
      throw new EmbeddingError("EMBED_BAD_RESPONSE", `${ref} returned a malformed embedding`);
    out[d.index] = Float32Array.from(v as number[]);
  }
  const dims = out[0]?.length;
  if (out.some((v) => v === undefined || v.length !== dims))
    throw new EmbeddingError("EMBED_BAD_RESPONSE", `${ref} returned vectors of differing dimensions`);
  return out;
}
