/**
 * The web chat in a real headless Chromium (Debian's package, driven by playwright-core): log in with
 * the token, send a message and watch the reply stream in from the fake model.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";
import { findChromium, launchChromium } from "../helpers/chromium.js";
import { REPO_ROOT } from "../helpers/daemon.js";

const chromium = findChromium();
if (!chromium)
  console.warn("web chat browser test SKIPPED: Chromium not found (apt-get install -y chromium)");

const TOKEN = "browser-token-4455";
/** Screenshots, with the console's (git-ignored; CI keeps them as an artifact). */
const SHOTS = join(REPO_ROOT, "test-artifacts", "console");
let h: GatewayHarness;
let browser: Browser;

/** The WCAG contrast ratio of two computed `rgb(r, g, b)` colours. */
function rgbContrast(a: string, b: string): number {
  const lum = (c: string): number => {
    const [r, g, bl] = (c.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((v) => {
      const x = Number(v) / 255;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

/** Opens the page with no token stored, types it into the login prompt and waits for the connection. */
async function logIn(page: Page): Promise<void> {
  await page.goto(h.base + "/");
  await page.waitForSelector("#login.show", { timeout: 15_000 });
  await page.fill("#token", TOKEN);
  await page.click("#loginbtn");
  await page.waitForSelector("#dot.on", { timeout: 15_000 });
}

describe.skipIf(!chromium)("web chat in headless Chromium", () => {
  beforeAll(async () => {
    h = await startGatewayDaemon({ gateway: { token: TOKEN } });
    browser = await launchChromium(chromium!);
    mkdirSync(SHOTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it("logs in, sends a message and shows the streamed markdown reply", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await logIn(page);

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
    // Phone width: nothing overflows sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.close();
  }, 60_000);

  it("first load: says which model answers; favicon; full dates; sessions named by their first message", async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
    await page.goto(h.base + "/");
    await page.evaluate((t) => localStorage.setItem("familiar.token", t), TOKEN);
    await page.reload();
    await page.waitForSelector("#dot.on", { timeout: 15_000 });
    // A new, empty chat: the hint names the model that will answer.
    await page.click("#new");
    const hint = await page.waitForSelector(".msg.system.hint", { timeout: 15_000 });
    expect(await hint.textContent()).toBe(
      "Answering: fake/test-model (agent main). /help lists the commands, /model switches the model.",
    );
    expect(await page.$eval('link[rel="icon"]', (l) => (l as HTMLLinkElement).href)).toMatch(
      /^data:image\/svg\+xml,/,
    );
    h.fake.enqueue({ text: "Lyon is lovely." });
    await page.fill("#input", "Plan a weekend trip to Lyon with the kids, trains preferred please");
    await page.press("#input", "Enter");
    await page.waitForSelector('.msg.assistant[data-state="final"]', { timeout: 20_000 });
    // The sidebar names the chat by its first message (cut at 60 characters), not "web-2026...".
    await page.waitForFunction(
      () => document.querySelector("#sessions li.active .name")?.textContent?.startsWith("Plan a weekend"),
      undefined,
      { timeout: 15_000 },
    );
    const item = await page.$("#sessions li.active");
    expect(await item!.$eval(".name", (e) => e.textContent)).toBe(
      "Plan a weekend trip to Lyon with the kids, trains preferred…",
    );
    expect(await page.textContent("#title")).toBe(
      "Familiar — Plan a weekend trip to Lyon with the kids, trains preferred…",
    );
    // Its channel's icon before the title: a web chat, labelled for screen readers.
    expect(await item!.getAttribute("data-channel")).toBe("web");
    expect(await item!.$eval(".row .ch svg path", (p) => p.getAttribute("d"))).toBeTruthy();
    expect(await item!.$eval(".row .ch", (e) => e.getAttribute("aria-label"))).toBe("web chat");
    // The date is shown whole (it wraps rather than being cut off) and carries the exact time.
    const small = await item!.$("small");
    const fits = await small!.evaluate((e) => e.scrollWidth <= e.clientWidth);
    expect(fits).toBe(true);
    expect(await small!.getAttribute("title")).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await small!.textContent()).toMatch(/^2 messages · .*\d{4}/);
    // In dark mode Send and New chat read at WCAG AA (4.5:1), measured on the rendered buttons.
    await page.emulateMedia({ colorScheme: "dark" });
    for (const sel of ["#send", "#new"]) {
      const [fg, bg] = await page.$eval(sel, (e) => [
        getComputedStyle(e).color,
        getComputedStyle(e).backgroundColor,
      ]);
      expect(rgbContrast(fg!, bg!), `${sel} ${fg} on ${bg}`).toBeGreaterThanOrEqual(4.5);
    }
    await page.screenshot({ path: join(SHOTS, "web-chat-1024-dark.png") });
    await page.close();
  }, 60_000);

  it("two chats that began with the same message are told apart in the list, at 1024 and 390 px", async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
    await page.goto(h.base + "/");
    await page.evaluate((t) => localStorage.setItem("familiar.token", t), TOKEN);
    await page.reload();
    await page.waitForSelector("#dot.on", { timeout: 15_000 });
    const first = "What should I cook tonight with leeks and potatoes?";
    for (const reply of ["Leek and potato soup.", "A leek gratin."]) {
      await page.click("#new");
      await page.waitForSelector(".msg.system.hint", { timeout: 15_000 });
      h.fake.enqueue({ text: reply });
      await page.fill("#input", first);
      await page.press("#input", "Enter");
      await page.waitForSelector(`.msg.assistant[data-state="final"]:has-text("${reply}")`, {
        timeout: 20_000,
      });
    }
    // What a person sees in the list: two entries with the same title, each with its own line under it.
    const entries = async () => {
      await page.waitForFunction(
        (t) =>
          Array.from(document.querySelectorAll("#sessions li .name")).filter((e) => e.textContent === t)
            .length === 2,
        first,
        { timeout: 15_000 },
      );
      return page.$$eval(
        "#sessions li",
        (lis, t) =>
          lis
            .filter((li) => li.querySelector(".name")?.textContent === t)
            .map((li) => {
              const small = li.querySelector("small.apart") as HTMLElement | null;
              const r = small?.getBoundingClientRect();
              return {
                seen: (li as HTMLElement).innerText,
                line: small?.innerText ?? "",
                // Shown whole: not cut off, and inside the window (the phone's menu fully open).
                whole:
                  !!small &&
                  !!r &&
                  small.scrollWidth <= small.clientWidth &&
                  r.width > 0 &&
                  r.left >= 0 &&
                  r.right <= innerWidth,
              };
            }),
        first,
      );
    };
    for (const [width, height] of [
      [1024, 768],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width, height });
      if (width === 390) {
        await page.click("#menu");
        // The menu slides in: measured and shot once it is fully open.
        await page.waitForFunction(() => document.querySelector("#side")!.getBoundingClientRect().left >= 0);
        await page.waitForTimeout(300);
      }
      const items = await entries();
      expect(items).toHaveLength(2);
      expect(items[0]!.seen).not.toBe(items[1]!.seen);
      expect(items.every((i) => i.whole)).toBe(true);
      const nums = items.map((i) => /^chat (\d) of 2 · started \d\d?:\d\d:\d\d/.exec(i.line)?.[1]);
      expect(nums.sort()).toEqual(["1", "2"]);
      await page.screenshot({ path: join(SHOTS, `web-chat-same-title-${width}-light.png`) });
    }
    // Each opens its own conversation: the older is chat 1.
    await page.setViewportSize({ width: 1024, height: 768 });
    for (const [n, reply] of [
      ["1", "Leek and potato soup."],
      ["2", "A leek gratin."],
    ] as const) {
      await page.click(`#sessions li:has(small.apart:has-text("chat ${n} of 2"))`);
      await page.waitForSelector(`.msg.assistant:has-text("${reply}")`, { timeout: 15_000 });
      expect(await page.$$eval(".msg.assistant", (m) => m.length)).toBe(1);
    }
    await page.close();
  }, 90_000);

  it("says plainly when the offline echo model is the one answering", async () => {
    const echo = await startGatewayDaemon({ gateway: { token: TOKEN }, config: { models: {} } });
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      await page.goto(echo.base + "/");
      await page.evaluate((t) => localStorage.setItem("familiar.token", t), TOKEN);
      await page.reload();
      const hint = await page.waitForSelector(".msg.system.hint", { timeout: 15_000 });
      expect(await hint.textContent()).toContain("The offline echo model is answering");
      await page.close();
    } finally {
      await echo.close();
    }
  }, 60_000);

  it("a wrong token brings the login back with the server's reason; the right one connects", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(h.base + "/");
    await page.waitForSelector("#login.show", { timeout: 15_000 });
    await page.fill("#token", "not-the-token");
    await page.click("#loginbtn");
    await page.waitForFunction(
      () => /invalid gateway token/.test(document.querySelector("#loginerr")?.textContent ?? ""),
      undefined,
      { timeout: 15_000 },
    );
    expect(await page.isVisible("#login.show")).toBe(true);
    expect(await page.$("#dot.on")).toBeNull();
    await page.fill("#token", TOKEN);
    await page.click("#loginbtn");
    await page.waitForSelector("#dot.on", { timeout: 15_000 });
    expect(await page.isVisible("#login.show")).toBe(false);
    await page.close();
  }, 60_000);

  it("shows an approval the turn waits for, with Approve and Deny; Approve lets it run", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await logIn(page);

    // `.envrc` makes the owner's own tools run code: writing it asks, sandbox or not.
    h.fake.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content: "export WEB=1\n" } }] },
      { text: "Written." },
    );
    await page.fill("#input", "write my .envrc");
    await page.press("#input", "Enter");
    const card = await page.waitForSelector(".msg.approval", { timeout: 20_000 });
    expect(await card.textContent()).toContain("write_file desk/.envrc");
    expect(await card.getAttribute("role")).toBe("alert");
    await page.click('.msg.approval button[data-decision="approve"]');
    await page.waitForSelector('.msg.approval .actions:has-text("approved")', { timeout: 15_000 });
    await page.waitForSelector('.msg.assistant[data-state="final"] .body:has-text("Written.")', {
      timeout: 20_000,
    });
    expect(readFileSync(join(h.dir, "workspace", "desk", ".envrc"), "utf8")).toBe("export WEB=1\n");
    await page.close();
  }, 60_000);

  it("a pending approval survives a reload and shows on another device; answered on one, it leaves the other", async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 768 } });
    await logIn(page);
    await page.click("#new");
    await page.waitForSelector(".msg.system.hint", { timeout: 15_000 });
    h.fake.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content: "export TWO=1\n" } }] },
      { text: "Written on the phone's word." },
    );
    await page.fill("#input", "write my .envrc again");
    await page.press("#input", "Enter");
    await page.waitForSelector(".msg.approval", { timeout: 20_000 });
    const session = await page.evaluate(() => localStorage.getItem("familiar.session"));

    // A reload: the turn still waits, and its card (with Approve, Deny and Stop) is back.
    await page.reload();
    await page.waitForSelector("#dot.on", { timeout: 15_000 });
    const again = await page.waitForSelector(".msg.approval", { timeout: 15_000 });
    expect(await again.textContent()).toContain("write_file desk/.envrc");
    expect(await again.$$eval("button", (bs) => bs.map((b) => b.textContent))).toEqual([
      "Approve",
      "Deny",
      "Stop",
    ]);

    // Another device (its own storage) opens the same chat: the same card.
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await phone.goto(h.base + "/");
    await phone.evaluate(
      ([t, s]) => {
        localStorage.setItem("familiar.token", t!);
        localStorage.setItem("familiar.session", s!);
      },
      [TOKEN, session],
    );
    await phone.reload();
    await phone.waitForSelector("#dot.on", { timeout: 15_000 });
    const card = await phone.waitForSelector(".msg.approval", { timeout: 15_000 });
    expect(await card.getAttribute("data-approval")).toBe(await again.getAttribute("data-approval"));

    // Approved on the phone: it runs, and the card leaves the other page.
    await phone.click('.msg.approval button[data-decision="approve"]');
    await phone.waitForSelector('.msg.approval .actions:has-text("approved")', { timeout: 15_000 });
    await page.waitForSelector(".msg.approval", { state: "detached", timeout: 15_000 });
    await page.waitForSelector('.msg.system:has-text("answered elsewhere")', { timeout: 15_000 });
    await phone.waitForSelector('.msg.assistant[data-state="final"] .body:has-text("Written on the phone")', {
      timeout: 20_000,
    });
    expect(readFileSync(join(h.dir, "workspace", "desk", ".envrc"), "utf8")).toBe("export TWO=1\n");
    await phone.close();
    await page.close();
  }, 90_000);

  it("shows tool activity compactly, answers /commands and reconnects after a daemon restart", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    let sockets = 0;
    page.on("websocket", () => sockets++);
    await logIn(page);
    const socketsBefore = sockets;

    // A turn that calls a tool: the call shows as one small chip on the reply, not as a wall of JSON.
    h.fake.enqueue({ toolCalls: [{ name: "current_time", arguments: {} }] }, { text: "It is *late*." });
    await page.fill("#input", "what time is it?");
    await page.press("#input", "Enter");
    // (History above may hold earlier replies with chips: look at this one.)
    const late = async (): Promise<{ chips: (string | null)[]; meta: string }[]> =>
      page.$$eval(".msg.assistant", (els) =>
        els
          .filter((e) => e.querySelector(".body")?.textContent === "It is late.")
          .map((e) => ({
            chips: Array.from(e.querySelectorAll(".tools .tool")).map((c) => c.textContent),
            meta: e.querySelector(".meta")?.textContent ?? "",
          })),
      );
    await page
      .waitForFunction(
        () =>
          Array.from(document.querySelectorAll('.msg.assistant[data-state="final"]')).some(
            (e) => e.querySelector(".body")?.textContent === "It is late." && e.querySelector(".tools .tool"),
          ),
        undefined,
        { timeout: 20_000 },
      )
      .catch(async (err: Error) => {
        throw new Error(
          `${err.message}\n${JSON.stringify(await page.$$eval("#log .msg", (els) => els.map((e) => `${e.className}[${(e as HTMLElement).dataset.state}]: ${e.innerHTML.slice(0, 200)}`)))}`,
        );
      });
    expect((await late())[0]!.chips).toEqual(["✓ current_time"]);
    // After a reload the reply keeps its tool chip and its token count.
    await page.reload();
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll(".msg.assistant .body")).some(
          (e) => e.textContent === "It is late.",
        ),
      undefined,
      { timeout: 20_000 },
    );
    const restored = await late();
    expect(restored).toHaveLength(1);
    expect(restored[0]!.chips).toEqual(["✓ current_time"]);
    expect(restored[0]!.meta).toMatch(/\d+ tokens/);
    // Stop shows only while a turn runs; the console is one click away.
    expect(await page.isVisible("#stop")).toBe(false);
    expect(await page.getAttribute("#console-link", "href")).toBe("/console/");

    // Slash commands are answered by the daemon without a model call.
    const calls = h.fake.requests.length;
    await page.fill("#input", "/help");
    await page.press("#input", "Enter");
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll(".msg.assistant .body")).some((el) =>
          /\/new/.test(el.textContent ?? ""),
        ),
      undefined,
      { timeout: 15_000 },
    );
    expect(h.fake.requests.length).toBe(calls);

    // The daemon restarts: the page notices, reconnects by itself with the stored token and reloads history.
    await h.restart();
    await waitFor(() => sockets > socketsBefore, 30_000);
    await page.waitForSelector("#dot.on", { timeout: 30_000 });
    await page.waitForSelector('.msg.assistant .body:has-text("It is late.")', { timeout: 15_000 });
    h.fake.enqueue({ text: "Back again." });
    await page.fill("#input", "still there?");
    await page.press("#input", "Enter");
    await page.waitForSelector('.msg.assistant[data-state="final"] .body:has-text("Back again.")', {
      timeout: 20_000,
    });
    expect(await page.isVisible("#login.show")).toBe(false);
    await page.close();
  }, 90_000);
});
