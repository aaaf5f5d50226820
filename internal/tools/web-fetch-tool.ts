/**
 * The `web_fetch` tool: GET a URL and return readable text.
 *
 * Invariants:
 * - the private-address guard runs inside the socket's DNS lookup, on every address the name resolves
 *   to, for the first request and every redirect hop; literal IPs (every IPv6 form that maps to an
 *   IPv4 address included) are checked before connecting, and the peer address once connected. A host in
 *   `tools.web.allow_hosts` or `tools.web.allow_private: true` skips it;
 * - the body is read up to `tools.web.max_bytes` (then cut with a note), within `tools.web.timeout_s`;
 * - HTML becomes text with html-to-text (imported lazily); binary types are refused;
 * - the containment egress gate (`ctx.egress`) is asked before every hop, the first and each redirect.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import http from "node:http";
import { isIP, type LookupFunction } from "node:net";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import { hostAllowed, isPrivateAddress } from "./net-guard.js";
import { defineTool, ToolError, type Tool } from "./tool.js";

const schema = z
  .object({
    url: z.string().min(1),
    raw: z.boolean().optional().describe("raw body, not HTML as text"),
  })
  .strict();

const MAX_REDIRECTS = 5;

interface FetchResult {
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  truncated: boolean;
}

/** A DNS lookup that refuses private addresses (wraps node's lookup; handles `all` both ways). */
function guardedLookup(host: string): LookupFunction {
  return ((hostname: string, options: LookupOptions, callback: (...a: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addrs: LookupAddress[]) => {
      if (err) return callback(err);
      const bad = addrs.find((a) => isPrivateAddress(a.address));
      if (bad)
        return callback(
          new ToolError(
            "WEB_PRIVATE_ADDRESS",
            `refused: ${host} resolves to ${bad.address}, a private/loopback/link-local address (allow it with tools.web.allow_hosts or tools.web.allow_private)`,
          ),
        );
      if (options.all) return callback(null, addrs);
      const first = addrs[0];
      if (!first) return callback(new ToolError("WEB_DNS", `${host} has no addresses`));
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}

function requestOnce(
  url: URL,
  guard: boolean,
  maxBytes: number,
  signal: AbortSignal,
): Promise<FetchResult & { location?: string }> {
  return new Promise((resolve, reject) => {
    // node:https (and with it tls, ~3 MB resident) loads on the first https fetch, not at start-up.
    const mod = url.protocol === "https:" ? process.getBuiltinModule("node:https") : http;
    const req = mod.request(
      url,
      {
        method: "GET",
        signal,
        headers: {
          "user-agent": "Mozilla/5.0 (compatible; familiar/0.1; +https://github.com/familiar)",
          accept: "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5",
          "accept-encoding": "identity",
        },
        ...(guard ? { lookup: guardedLookup(url.hostname) } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (status >= 300 && status < 400 && location) {
          res.resume();
          return resolve({
            url: url.href,
            status,
            contentType: "",
            body: Buffer.alloc(0),
            truncated: false,
            location,
          });
        }
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on("data", (c: Buffer) => {
          if (truncated) return;
          const room = maxBytes - size;
          if (c.length >= room) {
            chunks.push(c.subarray(0, room));
            size = maxBytes;
            truncated = true;
            res.destroy();
            resolve({
              url: url.href,
              status,
              contentType: String(res.headers["content-type"] ?? ""),
              body: Buffer.concat(chunks),
              truncated,
            });
            return;
          }
          chunks.push(c);
          size += c.length;
        });
        res.on("end", () =>
          resolve({
            url: url.href,
            status,
            contentType: String(res.headers["content-type"] ?? ""),
            body: Buffer.concat(chunks),
            truncated,
          }),
        );
        res.on("error", reject);
      },
    );
    // The address actually connected to is checked too: whatever resolved the name (a lookup that
    // ignored ours, a proxy agent, a cached socket), a private peer is cut before a byte is sent.
    if (guard)
      req.on("socket", (sock) => {
        const check = (): void => {
          const peer = sock.remoteAddress;
          if (peer && isPrivateAddress(peer))
            req.destroy(
              new ToolError(
                "WEB_PRIVATE_ADDRESS",
                `refused: ${url.hostname} connected to ${peer}, a private/loopback/link-local address`,
              ),
            );
        };
        if (sock.remoteAddress) check();
        else sock.once("connect", check);
      });
    req.on("error", reject);
    req.end();
  });
}

/** Fetches with redirects and the guard. Exported for tests. */
export async function guardedFetch(
  input: string,
  opts: {
    allowPrivate: boolean;
    allowHosts: readonly string[];
    maxBytes: number;
    signal: AbortSignal;
    /** The containment egress gate, asked before every hop (throws to refuse). */
    egress?: ((url: URL) => Promise<void>) | undefined;
  },
): Promise<FetchResult> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new ToolError("WEB_BAD_URL", `"${input}" is not a valid URL`);
  }
  for (let hop = 0; ; hop++) {
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new ToolError("WEB_BAD_URL", `only http and https URLs can be fetched, not ${url.protocol}`);
    const guard = !opts.allowPrivate && !hostAllowed(url.hostname, opts.allowHosts);
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    if (guard && isIP(literal) && isPrivateAddress(literal))
      throw new ToolError(
        "WEB_PRIVATE_ADDRESS",
        `refused: ${literal} is a private/loopback/link-local address (allow it with tools.web.allow_hosts or tools.web.allow_private)`,
      );
    await opts.egress?.(url);
    const r = await requestOnce(url, guard, opts.maxBytes, opts.signal);
    if (!r.location) return r;
    if (hop >= MAX_REDIRECTS) throw new ToolError("WEB_REDIRECTS", `more than ${MAX_REDIRECTS} redirects`);
    url = new URL(r.location, url);
  }
}

function isTextual(ct: string): boolean {
  return ct === "" || /^text\/|json|xml|javascript|x-www-form-urlencoded/i.test(ct);
}

/** Builds the web_fetch tool. */
export function createWebFetchTool(config: () => Config): Tool<typeof schema> {
  return defineTool({
    name: "web_fetch",
    group: "web",
    description: "Fetch a web page (GET) as readable text.",
    schema,
    async execute(args, signal, ctx) {
      const web = config().tools.web;
      // The timeout stops while the egress gate waits for the owner, and restarts in full after.
      const timeout = new AbortController();
      const arm = (): NodeJS.Timeout => setTimeout(() => timeout.abort(), web.timeout_s * 1000);
      let timer = arm();
      const combined = AbortSignal.any([signal, timeout.signal]);
      const gate = ctx.egress;
      const egress = gate
        ? async (u: URL): Promise<void> => {
            clearTimeout(timer);
            try {
              await gate(u);
            } finally {
              timer = arm();
            }
          }
        : undefined;
      let r: FetchResult;
      try {
        r = await guardedFetch(args.url, {
          allowPrivate: web.allow_private,
          allowHosts: web.allow_hosts,
          maxBytes: web.max_bytes,
          signal: combined,
          egress,
        });
      } catch (err) {
        clearTimeout(timer);
        if (err instanceof ToolError) throw err;
        const cause = (err as { cause?: unknown }).cause;
        if (cause instanceof ToolError) throw cause;
        if (timeout.signal.aborted && !signal.aborted)
          throw new ToolError("WEB_TIMEOUT", `no complete answer from ${args.url} within ${web.timeout_s}s`);
        const code = (err as NodeJS.ErrnoException).code ?? "";
        throw new ToolError(
          "WEB_UNREACHABLE",
          `could not reach ${args.url}: ${code || (err as Error).message}`,
        );
      }
      clearTimeout(timer);
      const ct = r.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
      if (!isTextual(ct)) throw new ToolError("WEB_BINARY", `${r.url} returned ${ct}, which is not text`);
      let text = r.body.toString("utf8");
      if (!args.raw && (ct.includes("html") || (ct === "" && /^\s*<(!doctype|html)/i.test(text)))) {
        const { convert } = await import("html-to-text");
        text = convert(text, {
          wordwrap: false,
          selectors: [
            { selector: "a", options: { ignoreHref: true } },
            { selector: "img", format: "skip" },
            { selector: "nav", format: "skip" },
            { selector: "script", format: "skip" },
            { selector: "style", format: "skip" },
          ],
        }).replace(/\n{3,}/g, "\n\n");
      }
      const head = `[${r.status} ${r.url}${r.truncated ? `, body cut at ${web.max_bytes} bytes` : ""}]\n`;
      if (r.status >= 400) return { isError: true, content: head + text.slice(0, 2000) };
      return head + text;
    },
  });
}
