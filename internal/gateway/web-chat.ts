/**
 * `GET /` serves the single-file web chat (internal/gateway/web/index.html). The file is read from the
 * source tree in both tsx and dist runs (`npm run build` does not copy html; the package ships
 * `internal/gateway/web/`), once, then served from memory.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { IncomingMessage, ServerResponse } from "node:http";

/** Finds web/index.html next to this module (tsx) or in the package's source tree (dist, bundle). */
export function loadWebChatHtml(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    join(here, "web", "index.html"),
    join(here, "..", "..", "..", "internal", "gateway", "web", "index.html"),
    // dist/bundle/ (and its chunks/ folder): the esbuild bundle of the CLI.
    join(here, "..", "..", "internal", "gateway", "web", "index.html"),
    join(here, "..", "..", "..", "..", "internal", "gateway", "web", "index.html"),
  ];
  for (const c of candidates) {
    try {
      return readFileSync(c, "utf8");
    } catch {
      /* try the next location */
    }
  }
  throw new Error(`web chat page not found (looked in ${candidates.join(", ")})`);
}

export function webChatRoute() {
  let cached: Buffer | undefined;
  let failure: string | undefined;
  return (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    if (req.method !== "GET" || (url.pathname !== "/" && url.pathname !== "/index.html")) return false;
    if (!cached && !failure) {
      try {
        cached = Buffer.from(loadWebChatHtml());
      } catch (err) {
        failure = (err as Error).message;
      }
    }
    if (!cached) {
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
      res.end(failure);
      return true;
    }
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "content-length": cached.length,
      "cache-control": "no-cache",
      // connect-src 'self' covers the same-origin websocket (CSP Level 3: ws: and wss: of the page's
      // own host and port); no other host. Never framed: a page of another site cannot dress the
      // chat up or click through it (frame-ancestors, and X-Frame-Options for older browsers).
      "content-security-policy":
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    });
    res.end(cached);
    return true;
  };
}
