/**
 * A reminder in the real web chat (headless Chromium, a real daemon with a FakeClock and the fake
 * model): after a reminder is set, the page offers notifications once (never asks by itself); when
 * the reminder runs it shows as a message of the session, and as a notification while the page is
 * hidden and notifications are allowed. The browser's Notification API is observed, not replaced.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { FakeClock } from "../../internal/core/clock.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";
import { findChromium, launchChromium } from "../helpers/chromium.js";

const chromium = findChromium();
if (!chromium)
  console.warn("reminders browser test SKIPPED: Chromium not found (apt-get install -y chromium)");

const TOKEN = "reminder-browser-token-1";
const clock = new FakeClock(Date.UTC(2026, 5, 1, 12, 0));
let h: GatewayHarness;
let browser: Browser;

/** Records each notification the page shows (the real constructor still runs). */
const RECORD_NOTIFICATIONS = `
  window.__shown = [];
  const Real = window.Notification;
  function Rec(title, opts) {
    window.__shown.push({ title, body: opts && opts.body });
    return new Real(title, opts);
  }
  Object.defineProperty(Rec, "permission", { get: () => Real.permission });
  Rec.requestPermission = (...a) => Real.requestPermission(...a);
  window.Notification = Rec;
`;

describe.skipIf(!chromium)("a reminder in the web chat", () => {
  beforeAll(async () => {
    h = await startGatewayDaemon({ clock, gateway: { token: TOKEN }, config: { heartbeat: { every: 0 } } });
    browser = await launchChromium(chromium!);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it("offers notifications once, then shows the reminder in the session and as a notification", async () => {
    const context = await browser.newContext();
    await context.addInitScript(RECORD_NOTIFICATIONS);
    const page = await context.newPage();
    await page.goto(h.base + "/");
    await page.waitForSelector("#login.show", { timeout: 15_000 });
    await page.fill("#token", TOKEN);
    await page.click("#loginbtn");
    await page.waitForSelector("#dot.on", { timeout: 15_000 });

    h.fake.enqueue(
      {
        toolCalls: [
          { name: "cron", arguments: { action: "add", id: "walk", message: "Walk.", at: "in 2 minutes" } },
        ],
      },
      { text: "I will remind you." },
    );
    await page.fill("#input", "remind me to walk in 2 minutes");
    await page.press("#input", "Enter");
    await page.waitForSelector('.msg.assistant[data-state="final"]', { timeout: 20_000 });
    // Offered in context, as a button: the browser's prompt comes only from the owner's click.
    const offer = await page.waitForSelector("#notify", { timeout: 10_000 });
    expect(await offer.textContent()).toBe("Also notify me when this page is hidden");
    expect(await page.evaluate(() => Notification.permission)).toBe("default");

    // The owner allowed notifications (the browser's own prompt is not scriptable headless), and the
    // page went to the background.
    await context.grantPermissions(["notifications"], { origin: h.base });
    await page.evaluate(() => Object.defineProperty(document, "visibilityState", { get: () => "hidden" }));
    h.fake.enqueue({ text: "Time for your **walk**." });
    await clock.advance(120_000);
    const bubble = await page.waitForSelector(".msg.assistant.reminder", { timeout: 15_000 });
    expect(await bubble.$eval(".body", (el) => el.textContent)).toBe("Time for your walk.");
    expect(await bubble.$eval(".meta", (el) => el.textContent)).toBe("reminder · walk");
    const shown = await waitFor(() =>
      page.evaluate(() => (window as unknown as { __shown: { title: string; body: string }[] }).__shown),
    );
    expect(shown).toEqual([{ title: "Familiar: reminder", body: "Time for your **walk**." }]);
    await context.close();
  });
});
