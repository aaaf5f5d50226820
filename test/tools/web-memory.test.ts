import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isPrivateAddress } from "../../internal/tools/net-guard.js";
import { SessionStore } from "../../internal/session/session-store.js";
import { createToolsHarness, FakeClock, type ToolsHarness } from "./harness.js";

let h: ToolsHarness | undefined;
let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/page") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        "<html><head><style>.x{}</style><script>alert(1)</script></head><body><nav>menu</nav><h1>Hello page</h1><p>Some <b>bold</b> words.</p></body></html>",
      );
    } else if (req.url === "/redirect") {
      res.writeHead(302, { location: "/page" });
      res.end();
    } else if (req.url === "/big") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("a".repeat(50_000));
    } else if (req.url === "/bin") {
      res.writeHead(200, { "content-type": "image/png" });
      res.end(Buffer.alloc(10));
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not here");
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("net guard", () => {
  it("classifies private, loopback, link-local, unique-local, CGNAT and mapped addresses", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "fd00::1",
      "fe80::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "[::1]",
    ])
      expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ["1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "172.32.0.1", "100.128.0.1"])
      expect(isPrivateAddress(a), a).toBe(false);
  });
});

describe("web_fetch", () => {
  it("refuses loopback with the guard on (literal IP and a name resolving to it)", async () => {
    h = await createToolsHarness();
    const r = await h.call("web_fetch", { url: `${base}/page` });
    expect(r.isError).toBe(true);
    expect(r.content).toContain("refused: 127.0.0.1 is a private/loopback/link-local address");
    const port = (server.address() as AddressInfo).port;
    const byName = await h.call("web_fetch", { url: `http://localhost:${port}/page` });
    expect(byName.isError).toBe(true);
    expect(byName.content).toMatch(/refused: localhost resolves to/);
    expect((await h.call("web_fetch", { url: "file:///etc/passwd" })).content).toContain(
      "only http and https",
    );
  });

  it("fetches and converts HTML when private addresses are allowed", async () => {
    h = await createToolsHarness({ tools: { web: { allow_private: true } } });
    const r = await h.call("web_fetch", { url: `${base}/redirect` });
    expect(r.isError).toBeFalsy();
    expect(r.content).toContain(`[200 ${base}/page]`);
    expect(r.content).toContain("HELLO PAGE");
    expect(r.content).toContain("Some bold words.");
    expect(r.content).not.toContain("alert(1)");
    expect(r.content).not.toContain("menu");
    const notFound = await h.call("web_fetch", { url: `${base}/missing` });
    expect(notFound.isError).toBe(true);
    expect(notFound.content).toContain("[404");
    expect((await h.call("web_fetch", { url: `${base}/bin` })).content).toContain(
      "image/png, which is not text",
    );
  });

  it("allows a host listed in allow_hosts and cuts large bodies", async () => {
    h = await createToolsHarness({ tools: { web: { allow_hosts: ["localhost"], max_bytes: 1000 } } });
    const port = (server.address() as AddressInfo).port;
    const r = await h.call("web_fetch", { url: `http://localhost:${port}/big` });
    expect(r.isError).toBeFalsy();
    expect(r.content).toContain("body cut at 1000 bytes");
    expect(r.content.length).toBeLessThan(1200);
  });
});

describe("memory", () => {
  it("writes a dated note in the configured zone and finds it with a snippet", async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 14, 23, 30)); // 00:30 on the 15th in Berlin
    h = await createToolsHarness({ timezone: "Europe/Berlin" }, { clock });
    const w = await h.call("memory_write", { text: "Anna prefers green tea with honey in the morning" });
    expect(w.content).toBe("saved to memory/2026-03-15.md");
    expect(readFileSync(join(h.workspace, "memory/2026-03-15.md"), "utf8")).toBe(
      "# 2026-03-15\n\n- 00:30 Anna prefers green tea with honey in the morning\n",
    );
    await h.call("memory_write", { text: "The car is a blue Volvo", kind: "fact" });
    expect(readFileSync(join(h.workspace, "MEMORY.md"), "utf8")).toContain(
      "- The car is a blue Volvo (2026-03-15)",
    );
    const s = await h.call("memory_search", { query: "green tea" });
    expect(s.content).toMatch(/^1\. memory\/2026-03-15\.md:3 \(2026-03-15\) \[score [\d.]+, keyword\]\n/);
    expect(s.content).toContain("**green** **tea**");
    const fact = await h.call("memory_search", { query: "volvo" });
    expect(fact.content).toContain("MEMORY.md");
    expect(fact.content).toContain("**Volvo**");
    expect((await h.call("memory_search", { query: "spaceship" })).content).toBe(
      'nothing in memory matches "spaceship"',
    );
  });

  it("re-indexes edited files incrementally and finds stored session messages", async () => {
    h = await createToolsHarness();
    writeFileSync(join(h.workspace, "MEMORY.md"), "# Memory\n\nThe wifi password is on the fridge.\n");
    expect((await h.call("memory_search", { query: "wifi" })).content).toContain("fridge");
    writeFileSync(join(h.workspace, "MEMORY.md"), "# Memory\n\nThe router lives in the hallway cupboard.\n");
    expect((await h.call("memory_search", { query: "wifi" })).content).toContain("nothing in memory matches");
    expect((await h.call("memory_search", { query: "cupboard" })).content).toContain("hallway");

    const store = new SessionStore(h.core.db, () => Date.UTC(2026, 0, 5));
    const session = store.ensure("agent:main:test:owner", "main");
    store.append(session.id, {
      role: "user",
      content: "Remind me that the dentist appointment is on Thursday",
    });
    store.append(session.id, { role: "assistant", content: "Noted." });
    const found = await h.call("memory_search", { query: "dentist thursday", sources: "sessions" });
    expect(found.content).toContain("session agent:main:test:owner 2026-01-05 user");
    expect(found.content).toContain("**dentist**");
    // Later messages are picked up incrementally.
    store.append(session.id, { role: "user", content: "Also the plumber comes on Friday" });
    expect((await h.call("memory_search", { query: "plumber" })).content).toContain("**plumber**");
  });
});

describe("current_time and send_message", () => {
  it("reports the time in the configured zone", async () => {
    const clock = new FakeClock(Date.UTC(2026, 6, 1, 10, 0, 0));
    h = await createToolsHarness({ timezone: "America/New_York" }, { clock });
    const r = await h.call("current_time", {});
    expect(r.content).toContain("Wednesday, 1 July 2026, 06:00 (America/New_York, UTC-04:00)");
    expect(r.content).toContain("ISO: 2026-07-01T06:00:00-04:00");
    expect((await h.call("current_time", { timezone: "Mars/Olympus" })).content).toContain(
      "unknown time zone",
    );
  });

  it("sends only to allowed targets", async () => {
    h = await createToolsHarness({ tools: { send_message: { allowed_targets: ["test:family"] } } });
    expect((await h.call("send_message", { target: "test:family", text: "dinner at 7" })).content).toBe(
      "sent to test:family",
    );
    expect(h.channel.sent).toMatchObject([{ target: "family", text: "dinner at 7" }]);
    const r = await h.call("send_message", { target: "test:stranger", text: "hi" });
    expect(r.isError).toBe(true);
    expect(r.content).toContain('target "test:stranger" is not allowed');
    expect(h.channel.sent).toHaveLength(1);
  });
});
