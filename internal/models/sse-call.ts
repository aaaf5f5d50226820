/**
 * One streamed POST to a model endpoint over undici's dispatcher (keep-alive connection pool), read
 * as server-sent events.
 *
 * Why not `fetch` + the openai SDK: per call they build a Request, a Response, Headers objects, web
 * streams and the SDK's iterators; measured on this machine (100 concurrent calls, a 6-event answer)
 * that is ~0.8 ms of client CPU per call against ~0.09 ms for this handler, most of it allocation.
 * Here the response bytes go straight from undici's parser into a `StringDecoder` (UTF-8 characters
 * split across chunks) and the {@link SseParser}; the consumer takes every event parsed so far in one
 * batch, so a call costs one promise per wake-up, not several per chunk.
 *
 * Failures are shaped like the ones the SDK over `fetch` threw, so classify-error.ts reads them the
 * same way: {@link ProviderHttpError} (status, headers, the body's `error`, message "<status>
 * <message>"), "Connection error." with the socket error as cause before a response, and "terminated"
 * with the socket error as cause when the body breaks off.
 */
import { StringDecoder } from "node:string_decoder";
import type { Dispatcher } from "undici";
import { SseParser } from "./sse-parser.js";

/** A queued event: its data, or data and name for a named event (`event: error`). */
export type SseItem = string | { data: string; event: string };

/** Error bodies beyond this are cut: only the message matters, and a proxy may send a whole page. */
const MAX_ERROR_BODY = 64 * 1024;

/**
 * An HTTP refusal or an error event inside the stream, with the fields and message of the openai SDK's
 * `APIError` (which the error classifier and the log already know).
 */
export class ProviderHttpError extends Error {
  readonly status: number | undefined;
  readonly headers: Record<string, string | string[] | undefined> | undefined;
  /** The body's `error` object (OpenAI's `{ error: { message, type, code } }`). */
  readonly error: unknown;
  readonly code: unknown;
  readonly type: unknown;
  /**
   * The usage object and id the body carried beside the error, when it did: a provider that had
   * counted tokens before failing says so here (the call is billed, so it goes in the ledger).
   */
  readonly billed: { usage: unknown; id: string | undefined } | undefined;
  constructor(
    status: number | undefined,
    error: unknown,
    message: string | undefined,
    headers?: Record<string, string | string[] | undefined>,
    body?: unknown,
  ) {
    super(apiErrorMessage(status, error, message));
    this.name = "ProviderHttpError";
    this.status = status;
    this.headers = headers;
    this.error = error;
    const b = body && typeof body === "object" ? (body as { usage?: unknown; id?: unknown }) : undefined;
    this.billed =
      b?.usage && typeof b.usage === "object"
        ? { usage: b.usage, id: typeof b.id === "string" && b.id ? b.id : undefined }
        : undefined;
    const data = error && typeof error === "object" ? (error as Record<string, unknown>) : undefined;
    this.code = data?.code;
    this.type = data?.type;
  }
}

/** The SDK's `APIError.makeMessage`, so messages read as they did. */
function apiErrorMessage(status: number | undefined, error: unknown, message: string | undefined): string {
  const em = error && typeof error === "object" ? (error as { message?: unknown }).message : undefined;
  const msg = em
    ? typeof em === "string"
      ? em
      : JSON.stringify(em)
    : error
      ? JSON.stringify(error)
      : message;
  if (status && msg) return `${status} ${msg}`;
  if (status) return `${status} status code (no body)`;
  return msg || "(no status code or body)";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What one call needs; `headers` and the dispatcher are the provider's, built once. */
export interface SseCallOptions {
  dispatcher: Dispatcher;
  origin: string;
  /** Path and query of the endpoint. */
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Called whenever bytes (or the response head) arrive: re-arms the caller's inactivity timer. */
  onActivity: () => void;
  /** undici's header parser (`util.parseHeaders`), used for error responses only. */
  parseHeaders: (raw: Buffer[]) => Record<string, string | string[] | undefined>;
}

/** A streamed call in flight. Pull batches with {@link next}; {@link abort} stops it at once. */
export class SseCall implements Dispatcher.DispatchHandlers {
  private queue: SseItem[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private abortSocket: ((err?: Error) => void) | undefined;
  private pendingAbort: Error | undefined;
  private decoder: StringDecoder | undefined;
  private parser: SseParser | undefined;
  private status = 0;
  private rawHeaders: Buffer[] | undefined;
  private errorBody: Buffer[] | undefined;
  private errorBytes = 0;
  private released: (() => void) | undefined;
  private readonly opts: SseCallOptions;

  constructor(opts: SseCallOptions) {
    this.opts = opts;
    opts.dispatcher.dispatch(
      {
        origin: opts.origin,
        path: opts.path,
        method: "POST",
        headers: opts.headers,
        body: opts.body,
        // The caller's own timer bounds the first byte and every silence (`timeoutMs`).
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      this,
    );
  }

  /** The events parsed since the last call; null once the stream ended; throws its failure. */
  async next(): Promise<SseItem[] | null> {
    for (;;) {
      if (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        return batch;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** True once the response was read to its end (the connection went back to the pool) or failed. */
  get finished(): boolean {
    return this.ended;
  }

  /**
   * The consumer is done (it read `[DONE]`) but the body has not ended yet: its last bytes usually
   * follow in the next packet. Lets it end so the connection goes back to the pool instead of being
   * destroyed; `onEnd` runs when it has (the caller's timer still bounds the wait).
   */
  release(onEnd: () => void): void {
    if (this.ended) return onEnd();
    this.released = onEnd;
  }

  /** Stops the call: the socket is destroyed, and {@link next} throws `reason` (after queued events). */
  abort(reason: Error): void {
    if (this.ended) return;
    this.fail(reason);
    if (this.abortSocket) this.abortSocket(reason);
    // Not on a socket yet (connecting, or queued in the pool): undici aborts it on connect.
    else this.pendingAbort = reason;
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortSocket = abort;
    if (this.pendingAbort) abort(this.pendingAbort);
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    if (status < 200) return true; // 1xx: the real head follows
    this.status = status;
    // Kept as raw buffers (parsed only when asked): a proxy's cost header is read once per call.
    this.rawHeaders = rawHeaders;
    this.opts.onActivity();
    if (status >= 300) {
      // Not followed: the SDK over fetch followed redirects, but a model endpoint that redirects a
      // POST is a misconfigured base_url, and reporting it beats re-sending the prompt elsewhere.
      this.rawHeaders = rawHeaders;
      this.errorBody = [];
    } else {
      this.decoder = new StringDecoder("utf8");
      this.parser = new SseParser((data, event) => {
        this.queue.push(event === "" ? data : { data, event });
      });
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.opts.onActivity();
    if (this.errorBody) {
      if (this.errorBytes < MAX_ERROR_BODY) {
        this.errorBody.push(chunk);
        this.errorBytes += chunk.length;
      }
      return true;
    }
    if (this.ended || this.released) return true;
    this.parser?.feed(this.decoder?.write(chunk) ?? "");
    if (this.queue.length > 0) this.notify();
    return true;
  }

  onComplete(): void {
    if (this.ended) return;
    if (this.errorBody) {
      this.fail(this.httpError(Buffer.concat(this.errorBody).toString("utf8")));
      return;
    }
    if (this.released) {
      this.ended = true;
      this.released();
      return;
    }
    const tail = this.decoder?.end() ?? "";
    if (tail) this.parser?.feed(tail);
    this.parser?.end();
    this.ended = true;
    this.notify();
  }

  onError(err: Error): void {
    if (this.ended) return;
    if (this.errorBody) {
      // As the SDK did when reading an error body failed: the status with the read error's message.
      this.fail(new ProviderHttpError(this.status, undefined, err.message, this.headers()));
      return;
    }
    // What fetch threw: "fetch failed" before a response (the SDK made it "Connection error."),
    // "terminated" when the body broke off; the socket error (code, message) is the cause either way.
    this.fail(
      this.status === 0
        ? new ProviderConnectionError("Connection error.", { cause: err })
        : new TypeError("terminated", { cause: err }),
    );
  }

  private httpError(text: string): ProviderHttpError {
    const json = safeJson(text);
    // The SDK's normalisation: `{ error: {...} }` gives the inner object, any other JSON object itself.
    const error =
      json && typeof json === "object" ? ((json as { error?: unknown }).error ?? json) : undefined;
    return new ProviderHttpError(this.status, error, json ? undefined : text, this.headers(), json);
  }

  /** A response header (lower-case name) of the head received, or undefined. */
  header(name: string): string | undefined {
    const v = this.headers()[name];
    return Array.isArray(v) ? v[0] : v;
  }

  private headers(): Record<string, string | string[] | undefined> {
    return this.rawHeaders ? this.opts.parseHeaders(this.rawHeaders) : {};
  }

  private fail(err: Error): void {
    this.failure = err;
    this.ended = true;
    this.notify();
    this.released?.();
  }

  private notify(): void {
    const wake = this.wake;
    if (wake) {
      this.wake = undefined;
      wake();
    }
  }
}

/** Could not get a response: the socket error (ECONNREFUSED, ENOTFOUND, ...) is the cause. */
export class ProviderConnectionError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = "ProviderConnectionError";
  }
}
