/**
 * web_fetch's SSRF guard against every IPv6 spelling of a private IPv4 address (issue 18), and the
 * re-check on each redirect hop, against a real HTTP server on 127.0.0.1.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { embeddedIPv4, isPrivateAddress } from "../../internal/tools/net-guard.js";
import { createToolsHarness, type ToolsHarness } from "./harness.js";

let server: Server;
let port = 0;
const hits: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? "");
    if (req.url?.startsWith("/hop")) {
      res.writeHead(302, { location: decodeURIComponent(req.url.slice("/hop?to=".length)) });
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("internal secret");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

let h: ToolsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("net guard: IPv6 forms of private IPv4 addresses", () => {
  it("refuses every form that maps to loopback or a private range, and keeps public ones", () => {
    const refused = [
      "::127.0.0.1", // IPv4-compatible (::/96)
      "::7f00:1",
      "::ffff:127.0.0.1", // IPv4-mapped
      "::ffff:7f00:1",
      "::ffff:0:7f00:1", // IPv4-translated (::ffff:0:0/96)
      "::ffff:0:10.0.0.1",
      "64:ff9b::7f00:1", // NAT64
      "64:ff9b::192.168.1.1",
      "64:ff9b:1::a00:1", // NAT64 local-use
      "2002:7f00:1::", // 6to4 of 127.0.0.1
      "2002:c0a8:101::1", // 6to4 of 192.168.1.1
      "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1
      "[::ffff:0:7f00:1]",
      "::1",
      "::",
      "fe80::1%eth0",
      "fd00::1",
    ];
    for (const a of refused) expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ["2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1", "8.8.8.8"])
      expect(isPrivateAddress(a), a).toBe(false);
    expect(embeddedIPv4("2002:c0a8:101::1")).toEqual(["192.168.1.1"]);
    expect(embeddedIPv4("2001:0:4136:e378:8000:63bf:80ff:fffe")).toEqual(["65.54.227.120", "127.0.0.1"]);
  });

  it("web_fetch refuses the IPv6-mapped loopback literals before connecting", async () => {
    h = await createToolsHarness();
    hits.length = 0;
    for (const host of ["[::127.0.0.1]", "[::ffff:0:7f00:1]", "[::ffff:7f00:1]", "[64:ff9b::7f00:1]"]) {
      const r = await h.call("web_fetch", { url: `http://${host}:${port}/` });
      expect(r.isError, host).toBe(true);
      expect(r.content, host).toMatch(/refused: .* is a private\/loopback\/link-local address/);
    }
    expect(hits).toEqual([]);
  });

  it("re-checks every redirect hop: an allowed host cannot bounce the fetch to a mapped loopback", async () => {
    h = await createToolsHarness({ tools: { web: { allow_hosts: ["localhost"] } } });
    hits.length = 0;
    const target = encodeURIComponent(`http://[::127.0.0.1]:${port}/secret`);
    const r = await h.call("web_fetch", { url: `http://localhost:${port}/hop?to=${target}` });
    expect(r.isError).toBe(true);
    expect(r.content).toContain("refused: ::7f00:1 is a private/loopback/link-local address");
    expect(hits.some((u) => u.startsWith("/hop"))).toBe(true);
    expect(hits).not.toContain("/secret");
  });
});
