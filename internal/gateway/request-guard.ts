/**
 * The gateway's front door, checked before any route or websocket handshake does work:
 *
 * - Host (DNS rebinding): a page on `evil.example` whose DNS later points at 127.0.0.1 reaches the
 *   daemon with `Host: evil.example`. Only loopback names (`localhost`, `*.localhost`), IP literals
 *   (a rebinding page always has a name, never an address), the bind address and
 *   `gateway.allowed_hosts` are served; anything else is 421 naming the setting.
 * - Origin (cross-site pages): browsers send `Origin` on websocket upgrades and on cross-site or
 *   non-GET requests, and do not apply CORS to websockets. A request carrying `Origin` is served
 *   only when it is one of the gateway's own origins (a loopback name or address, the bind address or
 *   the request's own Host, each with the listening port) or listed in `gateway.allowed_origins`;
 *   otherwise 403, even with the right token. Requests without `Origin` (curl, SDKs, the CLI) are
 *   judged by the token alone.
 * - JSON means JSON: {@link requireJsonBody} refuses a body of any other Content-Type with 415, so no
 *   cross-site "simple request" (text/plain, form) reaches a JSON route.
 */
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import type { Config } from "../config/schema.js";
import { HttpError } from "./http-util.js";

/** True for host names and addresses that always mean this machine. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  return isIP(h) === 4 && h.startsWith("127.");
}

/** Splits a Host header into a lower-case hostname (brackets kept off) and an optional port. */
export function parseHostHeader(host: string): { hostname: string; port: number | undefined } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(host.trim());
  if (!m?.[1]) return undefined;
  return {
    hostname: m[1].toLowerCase().replace(/^\[|\]$/g, ""),
    port: m[2] !== undefined ? Number(m[2]) : undefined,
  };
}

function hostListed(hostname: string, list: readonly string[]): boolean {
  return list.some((entry) => {
    const e = entry.toLowerCase().replace(/^\[|\]$/g, "");
    // `.example.com` also admits every subdomain, as nginx's server_name does.
    return e.startsWith(".") ? hostname === e.slice(1) || hostname.endsWith(e) : hostname === e;
  });
}

/** The problem with the request's Host header, or undefined when it may be served. */
export function checkHost(req: IncomingMessage, gw: Config["gateway"]): HttpError | undefined {
  const raw = req.headers.host;
  const parsed = typeof raw === "string" ? parseHostHeader(raw) : undefined;
  const what = typeof raw === "string" ? JSON.stringify(raw) : "(none)";
  if (parsed) {
    const { hostname } = parsed;
    if (isLoopbackHost(hostname) || isIP(hostname) !== 0) return undefined;
    if (hostname === gw.bind.toLowerCase() || hostListed(hostname, gw.allowed_hosts)) return undefined;
  }
  return new HttpError(
    421,
    "host_not_allowed",
    `Host ${what} is not served by this gateway (DNS rebinding protection): add ${parsed ? `"${parsed.hostname}"` : "the name"} to gateway.allowed_hosts to reach it under that name`,
  );
}

/** Normalises an origin (`scheme://host[:port]`, default port dropped) or undefined when invalid. */
export function normalizeOrigin(origin: string): string | undefined {
  try {
    const u = new URL(origin);
    if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
    return u.origin;
  } catch {
    return undefined;
  }
}

/**
 * The problem with the request's Origin header, or undefined when it is absent or allowed.
 * `localPort` is the listening port the request arrived on (the gateway's own origins carry it).
 */
export function checkOrigin(req: IncomingMessage, gw: Config["gateway"]): HttpError | undefined {
  const raw = req.headers.origin;
  if (raw === undefined) return undefined;
  const origin = typeof raw === "string" ? normalizeOrigin(raw) : undefined;
  if (origin !== undefined) {
    if (gw.allowed_origins.some((o) => normalizeOrigin(o) === origin)) return undefined;
    const u = new URL(origin);
    const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, "");
    const samePort = port === req.socket.localPort;
    if (samePort && (isLoopbackHost(host) || host === gw.bind.toLowerCase())) return undefined;
    // Same origin as the address the browser used (already vetted by the Host check): the web pages
    // served by this gateway under an allowed name, e.g. behind a reverse proxy on another port.
    const reqHost = req.headers.host;
    if (typeof reqHost === "string" && u.host.toLowerCase() === reqHost.toLowerCase()) return undefined;
  }
  return new HttpError(
    403,
    "origin_not_allowed",
    `Origin ${JSON.stringify(String(raw))} may not use this gateway (cross-site request refused): add it to gateway.allowed_origins if you trust that page`,
  );
}

/** Host first (the rebinding case), then Origin. The error to send, or undefined to go on. */
export function checkRequest(req: IncomingMessage, gw: Config["gateway"]): HttpError | undefined {
  return checkHost(req, gw) ?? checkOrigin(req, gw);
}

/**
 * 415 unless a request with a body declares a JSON Content-Type (`application/json` or `+json`).
 * Bodiless requests (no Content-Length or zero, no Transfer-Encoding) pass: there is nothing to read.
 */
export function requireJsonBody(req: IncomingMessage): void {
  const length = req.headers["content-length"];
  const hasBody = req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
  if (!hasBody) return;
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type)) return;
  throw new HttpError(
    415,
    "unsupported_media_type",
    `expected Content-Type: application/json, got ${type ? JSON.stringify(type) : "none"}`,
  );
}
