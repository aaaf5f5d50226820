/**
 * The web chat in a real headless Chromium (Debian's package, driven by playwright-core): log in with
 * the token, send a message and watch the reply stream in from the fake model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import type { Browser } from "playwright-core";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

function findChromium(): string | undefined {
  for (const p of [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"])
    if (p && existsSync(p)) return p;
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const chromium = findChromium();
if (!chromium)
  console.warn("web chat browser test SKIPPED: Chromium not found (apt-get install -y chromium)");

const TOKEN = "browser-token-4455";
let h: GatewayHarness;
let browser: Browser;

describe.skipIf(!chromium)("web chat in headless Chromium", () => {
  beforeAll(async () => {
    h = await startGatewayDaemon({ gateway: { token: TOKEN } });
    const { chromium: pw } = await import("playwright-core");
    browser = await pw.launch({
      executablePath: chromium,
      args: [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it("logs in, sends a message and shows the streamed markdown reply", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(h.base + "/");
    // No token stored yet: the login prompt appears.
    await page.waitForSelector("#login.show", { timeout: 15_000 });
    await page.fill("#token", TOKEN);
    await page.click("#loginbtn");
    await page.waitForSelector("#dot.on", { timeout: 15_000 });

    h.fake.enqueue({
      text: "Here is **bold** and <script>alert(1)</script> safely.",
      chunkSize: 4,
      delayMs: 40,
    });
    await page.fill("#input", "hello browser");
    await page.press("#input", "Enter");
    await page.waitForSelector('.msg.assistant[data-state="streaming"] .body p', { timeout: 15_000 });
    const partial = await page.textContent('.msg.assistant[data-state="streaming"] .body');
    const done = await page.waitForSelector('.msg.assistant[data-state="final"]', { timeout: 20_000 });
    const full = (await done.textContent()) ?? "";
    expect(partial?.length ?? 0).toBeLessThan(full.length);
    expect(full).toContain("Here is bold and <script>alert(1)</script> safely.");
    expect(await done.$eval(".body strong", (el) => el.textContent)).toBe("bold");
    expect(await page.$$eval(".body script", (els) => els.length)).toBe(0);
    expect(await page.textContent(".msg.user")).toBe("hello browser");
    // The session shows up in the list, and the token was kept for the next visit.
    await page.waitForSelector("#sessions li", { timeout: 15_000 });
    expect(await page.evaluate(() => localStorage.getItem("familiar.token"))).toBe(TOKEN);
    await page.close();
  }, 60_000);
});
