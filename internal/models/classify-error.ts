/**
 * Maps whatever a provider call threw (openai SDK errors, fetch/undici network errors, stream parse
 * errors, aborts) to a {@link ModelError} with a code the router can act on.
 *
 * Works structurally (status, headers, code, cause chain) rather than with `instanceof` on SDK classes,
 * so this file does not import the `openai` package and stays cheap to load.
 */
import { ModelError, type ModelErrorCode } from "./types.js";
import { clause, networkFix, safeUrl, scrubUrls } from "./provider-hint.js";

const CONTEXT_OVERFLOW_CODES = new Set(["context_length_exceeded", "string_above_max_length"]);
const CONTEXT_OVERFLOW_RE =
  /maximum context length|context[ _-]?length|context window|prompt is too long|too many tokens|input is too long|reduce the length of the messages|exceeds? the (model'?s )?(maximum|max)|token limit/i;
const NET_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNRESET",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_CLOSED",
]);

export interface ErrorOrigin {
  provider?: string;
  model?: string;
  /** The provider's base_url; messages show it without secrets. */
  baseUrl?: string;
}

interface Structural {
  status?: unknown;
  code?: unknown;
  type?: unknown;
  name?: unknown;
  message?: unknown;
  headers?: unknown;
  error?: unknown;
  cause?: unknown;
}

/** Reads a header from a fetch `Headers`, a plain record, or nothing. */
function header(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== "object") return undefined;
  const h = headers as { get?: (n: string) => string | null };
  if (typeof h.get === "function") return h.get(name) ?? undefined;
  const rec = headers as Record<string, unknown>;
  const v = rec[name] ?? rec[name.toLowerCase()];
  return typeof v === "string" ? v : undefined;
}

/**
 * Parses `retry-after-ms` (milliseconds) or `retry-after` (seconds or an HTTP date) into ms.
 * Returns undefined when absent or unparsable.
 */
export function retryAfterMs(headers: unknown, now: number = Date.now()): number | undefined {
  const ms = header(headers, "retry-after-ms");
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const ra = header(headers, "retry-after");
  if (ra === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(ra.trim())) return Math.ceil(Number(ra) * 1000);
  const at = Date.parse(ra);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Walks the `cause` chain collecting `code`s and messages (fetch wraps the socket error twice). */
function causeChain(err: unknown): { codes: string[]; messages: string[]; names: string[] } {
  const codes: string[] = [];
  const messages: string[] = [];
  const names: string[] = [];
  let cur: unknown = err;
  for (let i = 0; i < 6 && cur && typeof cur === "object"; i++) {
    const s = cur as Structural;
    if (typeof s.code === "string") codes.push(s.code);
    if (typeof s.message === "string") messages.push(s.message);
    if (typeof s.name === "string") names.push(s.name);
    cur = s.cause;
  }
  return { codes, messages, names };
}

function where(o: ErrorOrigin): string {
  const ref = o.provider && o.model ? `${o.provider}/${o.model}` : (o.model ?? o.provider ?? "model");
  const url = safeUrl(o.baseUrl);
  return url ? `${ref} at ${url}` : ref;
}

/** Classifies `err`; a {@link ModelError} passes through (with origin filled in when missing). */
export function classifyModelError(err: unknown, origin: ErrorOrigin = {}): ModelError {
  if (err instanceof ModelError) {
    if (err.info.provider || !origin.provider) return err;
    return new ModelError(err.code, err.message, { ...err.info, ...origin });
  }
  const s = (err && typeof err === "object" ? err : {}) as Structural;
  const status = typeof s.status === "number" ? s.status : undefined;
  const body = s.error && typeof s.error === "object" ? (s.error as Structural) : undefined;
  const apiCode =
    typeof s.code === "string" ? s.code : typeof body?.code === "string" ? body.code : undefined;
  const rawMsg =
    (typeof body?.message === "string" ? body.message : undefined) ??
    (typeof s.message === "string" ? s.message : String(err));
  const msg = clause(scrubUrls(rawMsg.replace(/\s+/g, " ")));
  const name = typeof s.name === "string" ? s.name : "";
  const chain = causeChain(err);
  const at = where(origin);
  const p = origin.provider ?? "<provider>";
  const mk = (code: ModelErrorCode, text: string, extra: { retryAfterMs?: number } = {}): ModelError =>
    new ModelError(code, text, {
      provider: origin.provider,
      model: origin.model,
      ...(origin.baseUrl ? { baseUrl: safeUrl(origin.baseUrl) } : {}),
      ...(status !== undefined ? { status } : {}),
      ...extra,
      cause: err,
    });

  if (name === "APIUserAbortError" || name === "AbortError")
    return mk("MODEL_ABORTED", `request to ${at} was aborted`);
  if (name === "APIConnectionTimeoutError" || chain.codes.includes("ETIMEDOUT") || name === "TimeoutError")
    return mk("MODEL_TIMEOUT", `${at} did not answer in time`);

  if (status !== undefined) {
    const overflow =
      (apiCode !== undefined && CONTEXT_OVERFLOW_CODES.has(apiCode)) ||
      ((status === 400 || status === 413 || status === 422) && CONTEXT_OVERFLOW_RE.test(msg));
    if (overflow) return mk("MODEL_CONTEXT_OVERFLOW", `the prompt is too long for ${at}: ${msg}`);
    if (status === 401 || status === 403)
      return mk(
        "MODEL_AUTH",
        `${at} refused the credentials (HTTP ${status}): ${msg}; check models.providers.${p}.api_key`,
      );
    if (status === 429) {
      const ra = retryAfterMs(s.headers);
      return mk(
        "MODEL_RATE_LIMIT",
        `${at} is rate limited (HTTP 429): ${msg}`,
        ra !== undefined ? { retryAfterMs: ra } : {},
      );
    }
    if (status === 408) return mk("MODEL_TIMEOUT", `${at} timed out (HTTP 408): ${msg}`);
    if (status >= 500) {
      const ra = retryAfterMs(s.headers);
      return mk(
        "MODEL_SERVER",
        `${at} had a server error (HTTP ${status}): ${msg}`,
        ra !== undefined ? { retryAfterMs: ra } : {},
      );
    }
    if (status === 404)
      return mk(
        "MODEL_BAD_REQUEST",
        `${at} was not found (HTTP 404): ${msg}; check the model name and models.providers.${p}.base_url`,
      );
    if (status >= 400) return mk("MODEL_BAD_REQUEST", `${at} rejected the request (HTTP ${status}): ${msg}`);
  }

  // No HTTP status: an error inside the stream body, a network failure or a parse failure.
  if (CONTEXT_OVERFLOW_RE.test(msg) && (apiCode !== undefined || body !== undefined))
    return mk("MODEL_CONTEXT_OVERFLOW", `the prompt is too long for ${at}: ${msg}`);
  if (apiCode !== undefined && CONTEXT_OVERFLOW_CODES.has(apiCode))
    return mk("MODEL_CONTEXT_OVERFLOW", `the prompt is too long for ${at}: ${msg}`);
  if (err instanceof SyntaxError || /Could not parse|Unexpected (token|end)|JSON/i.test(msg))
    return mk("MODEL_BAD_STREAM", `${at} sent a malformed stream: ${msg}`);
  const netCode = chain.codes.find((c) => NET_CODES.has(c));
  const deepest = clause(scrubUrls(chain.messages.at(-1) ?? msg));
  const fix = (): string => networkFix(p, origin.baseUrl, chain.codes, deepest);
  if (netCode) return mk("MODEL_UNREACHABLE", `cannot reach ${at} (${netCode}): ${deepest}; ${fix()}`);
  // The openai SDK's APIConnectionError keeps name "Error"; its message is "Connection error.".
  const ctor = (err as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  if (
    name === "APIConnectionError" ||
    ctor === "APIConnectionError" ||
    /fetch failed|socket hang up|network|^terminated$|^connection error$/i.test(msg)
  )
    return mk("MODEL_UNREACHABLE", `cannot reach ${at}: ${deepest}; ${fix()}`);
  if (body !== undefined) return mk("MODEL_SERVER", `${at} reported an error mid-stream: ${msg}`);
  return mk("MODEL_SERVER", `${at} failed: ${msg}`);
}
