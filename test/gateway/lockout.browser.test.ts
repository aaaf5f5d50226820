/**
 * Issue 32: any web page used to lock the owner out. A page on another origin (a second loopback
 * port) loads ten `<img src="http://127.0.0.1:PORT/api/sessions">` tags in headless Chromium; those
 * requests carry no token, so they are not guesses: the owner's token still gets 200 and the web chat
 * stays connected (and reconnects after a reload). The web chat cannot be framed by another site,
 * and its CSP lets it connect to its own origin only (and it still connects, over ws, in Chromium).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";
import { findChromium, launchChromium } from "../helpers/chromium.js";

const chromium = findChromium();
if (!chromium)
  console.warn("lock-out browser test SKIPPED: Chromium not found (apt-get install -y chromium)");

function imgPage(port: number): string {
  const imgs = Array.from(
    { length: 10 },
    (_, i) =>
      `<img src="http://127.0.0.1:${port}/api/sessions?i=${i}" onerror="window.done++" onload="window.done++">`,
  ).join("\n");
  return `<!doctype html><html><head><script>window.done = 0;</script></head><body>${imgs}</body></html>`;
}

let h: GatewayHarness;
let browser: Browser;
let evil: Server;

describe.skipIf(!chromium)("a page of <img> tags on another origin", () => {
  beforeAll(async () => {
    h = await startGatewayDaemon({ gateway: { rate_limit: { max_failures: 3, window_s: 600 } } });
    const page = imgPage(h.port);
    const framing = `<!doctype html><html><body><iframe id="f" src="http://127.0.0.1:${h.port}/"></iframe></body></html>`;
    evil = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(req.url === "/frame" ? framing : page);
    });
    await new Promise<void>((r) => evil.listen(0, "127.0.0.1", r));
    browser = await launchChromium(chromium!);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
    await h?.close();
  });

  it("does not lock the owner out: the token still gets 200 and the web chat stays connected", async () => {
    const chat = await browser.newPage();
    await chat.goto(`${h.base}/#token=${encodeURIComponent(h.token)}`);
    await chat.waitForSelector("#dot.on", { timeout: 15_000 });

    const attacker = await browser.newPage();
    await attacker.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    await attacker.waitForFunction(() => (window as unknown as { done: number }).done === 10, undefined, {
      timeout: 20_000,
    });
    // Load them twice more: thirty credential-less requests in all, ten times max_failures.
    for (let i = 0; i < 2; i++) {
      await attacker.reload();
      await attacker.waitForFunction(() => (window as unknown as { done: number }).done === 10, undefined, {
        timeout: 20_000,
      });
    }

    expect((await fetch(`${h.base}/api/sessions`, { headers: h.headers() })).status).toBe(200);
    expect(await chat.isVisible("#dot.on")).toBe(true);
    // A fresh load of the web chat (a new websocket) connects as well.
    await chat.reload();
    await chat.waitForSelector("#dot.on", { timeout: 15_000 });
    expect(await chat.isVisible("#login.show")).toBe(false);
  }, 90_000);

  it("the web chat cannot be framed by another site; its CSP allows its own origin only, and it connects", async () => {
    const r = await fetch(`${h.base}/`);
    const csp = r.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/connect-src 'self';/);
    expect(csp).not.toMatch(/\bws:|\bwss:/);
    expect(r.headers.get("x-frame-options")).toBe("DENY");

    const attacker = await browser.newPage();
    await attacker.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/frame`);
    const frame = await (await attacker.waitForSelector("#f")).contentFrame();
    // Chromium leaves the blocked frame empty (no web chat markup, no websocket).
    await expect
      .poll(async () => frame?.evaluate(() => document.querySelector("#dot") === null).catch(() => true), {
        timeout: 15_000,
      })
      .toBe(true);
    await attacker.close();

    // The page itself, opened directly, still connects over its own-origin websocket under that CSP.
    const chat = await browser.newPage();
    const violations: string[] = [];
    chat.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await chat.goto(`${h.base}/#token=${encodeURIComponent(h.token)}`);
    await chat.waitForSelector("#dot.on", { timeout: 15_000 });
    expect(violations).toEqual([]);
    await chat.close();
  }, 60_000);
});
