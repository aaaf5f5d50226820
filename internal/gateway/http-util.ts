/**
 * Small HTTP helpers shared by every gateway route (websocket upgrade, /v1, /api, hooks): capped body
 * reading, JSON parsing with clear errors, bearer extraction and a typed HTTP error.
 *
 * Invariant: a body is never buffered past `maxBytes`; the excess is drained (not stored) so the
 * connection can answer 413 and survive.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** An error with an HTTP status and a stable machine code; routes turn it into their error shape. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    /** OpenAI-style `param` (the failing field), when one is known. */
    readonly param?: string,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** Reads the whole request body, rejecting with a 413 HttpError past `maxBytes`. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.reject(tooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on("data", (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > maxBytes) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (!failed) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.on("error", (err) => {
      if (!failed)
        reject(new HttpError(400, "bad_request", `request body could not be read: ${err.message}`));
    });
  });
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(
    413,
    "payload_too_large",
    `request body exceeds gateway.max_body_bytes (${maxBytes} bytes)`,
  );
}

/** Reads and parses a JSON object body; 400 for malformed JSON or a non-object, 413 when too large. */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const raw = await readBody(req, maxBytes);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    throw new HttpError(400, "invalid_json", `request body is not valid JSON: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new HttpError(400, "invalid_body", "request body must be a JSON object");
  return parsed as Record<string, unknown>;
}

/**
 * The request target as a URL, or undefined when it cannot be parsed. Never throws: `new URL(req.url,
 * base)` throws on targets like `//` (read as a protocol-relative URL with an empty host) and would
 * otherwise take the process down from inside the server's request listener. The target is appended to
 * the base, so `//api/x` stays the path `//api/x` instead of becoming host `api`, path `/x`.
 */
export function requestUrl(raw: string | undefined): URL | undefined {
  const target = raw ?? "/";
  try {
    return new URL(`http://localhost${target.startsWith("/") ? target : `/${target}`}`);
  } catch {
    return undefined;
  }
}

/** `decodeURIComponent` for a path segment; a malformed escape (`%E0%A4%A`) is a 400, not a crash. */
export function decodePathSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, "invalid_path", `malformed percent-encoding in the path: ${JSON.stringify(s)}`);
  }
}

/** The token of an `Authorization: Bearer <token>` header, if present. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== "string") return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m?.[1]?.trim();
}

/** The client address for rate limiting (the socket peer; proxies are not trusted). */
export function clientAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? "unknown";
}

/** Writes a JSON response. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Writes an error in the gateway's own JSON shape `{error:{code,message}}`. */
export function sendError(res: ServerResponse, err: HttpError): void {
  sendJson(res, err.status, { error: { code: err.code, message: err.message } }, err.headers);
}

/** Converts anything thrown inside a route into an HttpError (unknown errors become 500). */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  return new HttpError(500, "internal", (err as Error)?.message ?? String(err));
}
