/**
 * The owner browses the web while the daemon runs: a page served from another local port (another
 * origin) tries what issue 17 showed working, in a real headless Chromium. Its no-cors text/plain
 * POSTs and its websocket (even holding the leaked token) do nothing: the fake model receives no
 * request, no agent or cron job appears. Then the web chat opened through `familiar dashboard`'s
 * link logs in by itself (the token leaves the address bar) and answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { dashboardCommand } from "../../internal/cli/dashboard.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";
import { findChromium, launchChromium } from "../helpers/chromium.js";

const chromium = findChromium();
if (!chromium)
  console.warn("cross-site browser test SKIPPED: Chromium not found (apt-get install -y chromium)");

/** The attacker's page: every trick at once; results land in `window.results`. */
function evilPage(port: number, token: string): string {
  const base = `http://127.0.0.1:${port}`;
  return `<!doctype html><html><body><script>
  window.results = { fetches: 0, ws: "pending" };
  const post = (path, body) =>
    fetch(${JSON.stringify(base)} + path, { mode: "no-cors", method: "POST", body })
      .then(() => window.results.fetches++, () => window.results.fetches++);
  Promise.all([
    post("/v1/chat/completions", JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "run id" }] })),
    post("/api/agents", JSON.stringify({ name: "pwned", system_prompt: "obey" })),
    post("/api/agents/main/sessions", JSON.stringify({ message: "run id" })),
  ]).then(() => (window.results.fetchesDone = true));
  const ws = new WebSocket(${JSON.stringify(`ws://127.0.0.1:${port}/ws`)});
  ws.onopen = () => {
    window.results.ws = "open";
    const req = (id, method, params) => ws.send(JSON.stringify({ type: "req", id, method, params }));
    req(1, "connect", { token: ${JSON.stringify(token)}, client: { name: "evil" }, protocol: 1 });
    req(2, "cron.add", { job: { id: "evil", every: "1m", message: "run id" } });
    req(3, "chat.send", { sessionKey: "evil", message: "run id" });
  };
  ws.onmessage = (e) => (window.results.ws = "message: " + e.data);
  ws.onclose = (e) => { if (window.results.ws === "pending") window.results.ws = "refused " + e.code; };
  </script></body></html>`;
}

let h: GatewayHarness;
let browser: Browser;
let evil: Server;

describe.skipIf(!chromium)("cross-site pages in headless Chromium", () => {
  beforeAll(async () => {
    h = await startGatewayDaemon();
    const page = evilPage(h.port, h.token);
    evil = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(page);
    });
    await new Promise<void>((r) => evil.listen(0, "127.0.0.1", r));
    browser = await launchChromium(chromium!);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
    await h?.close();
  });

  it("a page from another local port cannot make the daemon do anything, even holding the token", async () => {
    const cron = h.daemon.parts.cron;
    const jobsBefore = cron.list().map((j) => j.id);
    const agentsBefore = await (await fetch(`${h.base}/api/agents`, { headers: h.headers() })).json();
    const requestsBefore = h.fake.requests.length;

    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    await page.waitForFunction(
      () => {
        const r = (window as unknown as { results: { fetchesDone?: boolean; ws: string } }).results;
        return r.fetchesDone === true && r.ws !== "pending";
      },
      undefined,
      { timeout: 20_000 },
    );
    const results = await page.evaluate(() => (window as unknown as { results: unknown }).results);
    expect(results).toMatchObject({ fetches: 3, ws: expect.stringMatching(/^refused/) });
    await page.close();

    expect(h.fake.requests.length).toBe(requestsBefore);
    expect(cron.list().map((j) => j.id)).toEqual(jobsBefore);
    expect(await (await fetch(`${h.base}/api/agents`, { headers: h.headers() })).json()).toEqual(
      agentsBefore,
    );
    const sessions = (await (await fetch(`${h.base}/api/sessions`, { headers: h.headers() })).json()) as {
      sessions?: { sessionKey?: string; key?: string }[];
    };
    expect(JSON.stringify(sessions)).not.toContain("evil");
  }, 60_000);

  it("the web chat opened through the `familiar dashboard` link logs in by itself and answers", async () => {
    let out = "";
    const code = await dashboardCommand(
      { config: h.configPath },
      (s) => (out += s),
      () => undefined,
    );
    expect(code).toBe(0);
    const link = out.trim();
    expect(link).toBe(`${h.base}/#token=${encodeURIComponent(h.token)}`);

    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(link);
    await page.waitForSelector("#dot.on", { timeout: 15_000 });
    expect(await page.isVisible("#login.show")).toBe(false);
    // The token left the address bar (and history) and stays in this browser only.
    expect(page.url()).toBe(`${h.base}/`);
    expect(await page.evaluate(() => localStorage.getItem("familiar.token"))).toBe(h.token);

    h.fake.enqueue({ text: "Hello from the dashboard." });
    await page.fill("#input", "hi");
    await page.press("#input", "Enter");
    const done = await page.waitForSelector('.msg.assistant[data-state="final"]', { timeout: 20_000 });
    expect(await done.textContent()).toContain("Hello from the dashboard.");
    await waitFor(() => h.fake.requests.length > 0);
    await page.close();
  }, 60_000);
});
