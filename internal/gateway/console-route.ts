/**
 * `GET /console/...` serves the owner's console: the static files `npm run build` writes to
 * dist/console/ (cmd/build-console.mjs). Nothing is read at daemon start; a file is read from disk the
 * first time a browser asks for it and then kept (the whole console is a few files of ~100 KiB).
 *
 * Invariants:
 * - only names the build wrote are served: `index.html` and `assets/<name>` where `<name>` is one path
 *   segment of safe characters, so no request can walk out of the folder;
 * - hashed assets are `immutable` for a year; index.html is `no-cache` (always revalidated), so a new
 *   build is picked up on the next load;
 * - the files are public like the web chat page: they hold no data. Every byte of data the console
 *   shows comes through the websocket and /api, which need the gateway token.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { IncomingMessage, ServerResponse } from "node:http";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".json": "application/json; charset=utf-8",
};

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Finds dist/console by walking up from this module (sources, dist/ and dist/bundle/ all work). */
export function findConsoleDir(start = dirname(fileURLToPath(import.meta.url))): string | undefined {
  let dir = start;
  for (let i = 0; i < 6; i++) {
    const c = join(dir, "dist", "console");
    if (existsSync(join(c, "index.html"))) return c;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return undefined;
}

interface CachedFile {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
}

/** The route handler; `dir` overrides where the built files are (tests). */
export function consoleRoute(dir?: string) {
  let root: string | undefined = dir;
  const cache = new Map<string, CachedFile | null>();

  const load = (rel: string): CachedFile | undefined => {
    const hit = cache.get(rel);
    if (hit !== undefined) return hit ?? undefined;
    root ??= findConsoleDir();
    if (!root) return undefined;
    const ext = rel.slice(rel.lastIndexOf("."));
    const type = TYPES[ext];
    let file: CachedFile | null = null;
    if (type) {
      try {
        const body = readFileSync(join(root, rel));
        let gzip: Buffer | undefined;
        try {
          gzip = readFileSync(join(root, rel + ".gz"));
        } catch {
          /* not every file has a compressed twin */
        }
        file = { body, gzip, type };
      } catch {
        file = null;
      }
    }
    // Misses are remembered too (bounded: only build-shaped names reach here, and few of them).
    if (file || cache.size < 256) cache.set(rel, file);
    return file ?? undefined;
  };

  return (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    const p = url.pathname;
    if (p !== "/console" && !p.startsWith("/console/")) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
      res.end("method not allowed");
      return true;
    }
    if (p === "/console") {
      res.writeHead(308, { location: "/console/" + url.search });
      res.end();
      return true;
    }
    const rest = p.slice("/console/".length);
    const asset = /^assets\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/.exec(rest);
    const rel = asset
      ? `assets/${asset[1]}`
      : rest === "" || rest === "index.html"
        ? "index.html"
        : undefined;
    const file = rel ? load(rel) : undefined;
    if (!file) {
      const missing = !root && !findConsoleDir();
      res.writeHead(missing ? 503 : 404, { "content-type": "text/plain; charset=utf-8" });
      res.end(
        missing
          ? "the console is not built: run `npm run build` (it writes dist/console/)"
          : `no console file ${p}`,
      );
      return true;
    }
    const gz = file.gzip && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const body = gz ? file.gzip! : file.body;
    res.writeHead(200, {
      "content-type": file.type,
      "content-length": body.length,
      "cache-control": asset ? "public, max-age=31536000, immutable" : "no-cache",
      vary: "accept-encoding",
      ...(gz ? { "content-encoding": "gzip" } : {}),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      ...(asset ? {} : { "content-security-policy": CSP, "x-frame-options": "DENY" }),
    });
    res.end(req.method === "HEAD" ? undefined : body);
    return true;
  };
}
