/**
 * The one door out of the sandbox: an HTTP(S) proxy in the daemon on a unix socket, bound into a
 * sandbox that has no network of its own (`--unshare-net`). A sandboxed command reaches the network
 * only by asking it: `CONNECT host:port` (HTTPS, anything TLS) or an absolute-form `GET http://...`.
 *
 * Invariants:
 * - every connection passes the gate first (the containment egress policy: the allowlist when the
 *   session is clean, a grant or the owner's yes when tainted); a refusal is a 403 with the reason;
 * - a name is resolved here, and a private, loopback or link-local address is refused unless the host
 *   is in `tools.web.allow_hosts` or `tools.web.allow_private` is on (the daemon's own gateway and the
 *   owner's LAN stay out of reach, as for web_fetch); the connection goes to the address checked;
 * - the socket lives in a fresh 0700 folder and the proxy lives as long as one command.
 */
import { lookup } from "node:dns/promises";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostAllowed, isPrivateAddress } from "../net-guard.js";
import { BRIDGE_SCRIPT } from "./bridge-script.js";
import { writeFileSync } from "node:fs";

/**
 * Decides one connection; throws (any Error) to refuse, with a message for the command. `host` is as
 * it goes in a URL: a name, an IPv4 literal, or an IPv6 literal in brackets (`[::1]`), so the gate
 * can build `http://${host}:${port}/` from it.
 */
export type EgressGate = (host: string, port: number) => Promise<void>;

/** `host` as a URL's authority holds it: an IPv6 literal bracketed (once), anything else as is. */
export function urlHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, "");
  return net.isIPv6(bare) ? `[${bare}]` : bare;
}

export interface EgressProxyOptions {
  gate: EgressGate;
  /** `tools.web.allow_private` / `allow_hosts`: private addresses otherwise refused. */
  allowPrivate: boolean;
  allowHosts: readonly string[];
}

export interface EgressProxy {
  /** The folder to bind into the sandbox (holds `proxy.sock` and `bridge.cjs`). */
  dir: string;
  /** Every host:port asked for, with the verdict (tests, logs). */
  log: { target: string; allowed: boolean; reason?: string }[];
  close(): Promise<void>;
}

/** Where the folder appears inside the sandbox. */
export const PROXY_MOUNT = "/run/familiar-egress";
/** The loopback port the bridge listens on inside the sandbox. */
export const BRIDGE_PORT = 3128;

async function resolveChecked(host: string, o: EgressProxyOptions): Promise<string> {
  const literal = host.replace(/^\[|\]$/g, "");
  const addrs = net.isIP(literal) ? [literal] : (await lookup(literal, { all: true })).map((a) => a.address);
  const first = addrs[0];
  if (!first) throw new Error(`${host} has no addresses`);
  if (!o.allowPrivate && !hostAllowed(literal, o.allowHosts)) {
    const bad = addrs.find((a) => isPrivateAddress(a));
    if (bad) throw new Error(`${host} resolves to ${bad}, a private/loopback/link-local address`);
  }
  return first;
}

function parseTarget(authority: string): { host: string; port: number } | undefined {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(authority);
  if (!m?.[1] || !m[2]) return undefined;
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { host: m[1], port } : undefined;
}

/** Starts a proxy for one command. */
export async function startEgressProxy(o: EgressProxyOptions): Promise<EgressProxy> {
  const dir = mkdtempSync(join(tmpdir(), "familiar-egress-"));
  writeFileSync(join(dir, "bridge.cjs"), BRIDGE_SCRIPT, { mode: 0o644 });
  const log: EgressProxy["log"] = [];
  const decide = async (host: string, port: number): Promise<string> => {
    const target = `${host}:${port}`;
    try {
      // Bracketed: a bare IPv6 literal made every `http://[::1]:port/` an invalid URL at the gate.
      await o.gate(urlHost(host), port);
      const addr = await resolveChecked(host, o);
      log.push({ target, allowed: true });
      return addr;
    } catch (err) {
      log.push({ target, allowed: false, reason: (err as Error).message });
      throw err;
    }
  };
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    // Absolute-form plain HTTP: `GET http://host/path`.
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      res.writeHead(400).end("familiar egress proxy: expected an absolute http:// URL or CONNECT\n");
      return;
    }
    if (url.protocol !== "http:") {
      res.writeHead(400).end("familiar egress proxy: use CONNECT for https\n");
      return;
    }
    const port = Number(url.port || 80);
    decide(url.hostname, port).then(
      (addr) => {
        // Hop-by-hop proxy headers are for us, not for the host.
        const headers: http.OutgoingHttpHeaders = { ...req.headers, host: url.host };
        delete headers["proxy-connection"];
        delete headers["proxy-authorization"];
        const up = http.request(
          {
            host: addr,
            port,
            method: req.method,
            path: url.pathname + url.search,
            headers,
          },
          (r) => {
            res.writeHead(r.statusCode ?? 502, r.headers);
            r.pipe(res);
          },
        );
        up.on("error", (err) =>
          res.headersSent ? res.destroy() : res.writeHead(502).end(`${err.message}\n`),
        );
        req.pipe(up);
      },
      (err: unknown) => res.writeHead(403).end(`familiar egress proxy: refused: ${(err as Error).message}\n`),
    );
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("connect", (req, client, head) => {
    const t = parseTarget(req.url ?? "");
    client.on("error", () => client.destroy());
    if (!t) {
      client.end("HTTP/1.1 400 Bad Request\r\n\r\nexpected CONNECT host:port\n");
      return;
    }
    decide(t.host, t.port).then(
      (addr) => {
        const up = net.connect(t.port, addr, () => {
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
          if (head.length) up.write(head);
          up.pipe(client);
          client.pipe(up);
        });
        up.on("error", () => {
          if (!client.destroyed) client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
        });
        client.on("close", () => up.destroy());
      },
      (err: unknown) =>
        client.end(
          `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\nfamiliar egress proxy: refused: ${(err as Error).message}\n`,
        ),
    );
  });
  const socket = join(dir, "proxy.sock");
  await new Promise<void>((res, rej) => {
    server.once("error", rej);
    server.listen(socket, () => res());
  });
  return {
    dir,
    log,
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          res();
        });
      }),
  };
}

/**
 * The shell wrapper run inside the sandbox: starts the bridge (loopback port -> the proxy socket),
 * waits until it listens, runs the command (`$1`) and returns its exit code.
 */
export const PROXY_WRAPPER = [
  `"$FAMILIAR_NODE" ${PROXY_MOUNT}/bridge.cjs ${PROXY_MOUNT}/proxy.sock ${BRIDGE_PORT} &`,
  "i=0; while [ ! -e /tmp/.familiar-egress ] && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done",
  '/bin/sh -c "$1"',
].join("\n");

/** The environment that points programs at the bridge. */
export function proxyEnv(node: string): Record<string, string> {
  const url = `http://127.0.0.1:${BRIDGE_PORT}`;
  return {
    FAMILIAR_NODE: node,
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    // Node 24+ honours the variables above in fetch and http only when told to.
    NODE_USE_ENV_PROXY: "1",
    // No exceptions: the sandbox's own loopback holds only the bridge, and "localhost" for a
    // command means the host's (reached, if at all, through the proxy and its private-address rule).
    NO_PROXY: "",
    no_proxy: "",
  };
}
