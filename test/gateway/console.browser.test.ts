/**
 * The owner's console in a real headless Chromium (Debian's package, driven by playwright-core),
 * against a real `familiar run` child process with the fake model, the fake Telegram Bot API and a
 * cron job. Logs in through the login link, then walks what an owner does: channels healthy, a chat's
 * cost on the usage chart, its call tree, an exec approval approved from the console (the command
 * runs), a cron job run now, and a config error after a bad edit. Every view is screenshotted at
 * desktop and phone width into test-artifacts/console/ (git-ignored; CI keeps it as an artifact).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { dashboardCommand } from "../../internal/cli/dashboard.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "../fakes/telegram-server.js";
import { REPO_ROOT, cleanupDaemons, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";
import { waitFor } from "./harness.js";
import { findChromium, launchChromium } from "../helpers/chromium.js";

const chromium = findChromium();
if (!chromium) console.warn("console browser test SKIPPED: Chromium not found (apt-get install -y chromium)");

const TOKEN = "console-token-8f2d41";
const SHOTS = join(REPO_ROOT, "test-artifacts", "console");
const owner: FakeUser = { id: 4242, first_name: "Owner" };
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
let d: DaemonProcess;
let browser: Browser;
let page: Page;

/** The daemon's config: the fake model with a price, Telegram with the owner allowed, one cron job. */
function daemonConfig(): Record<string, unknown> {
  return {
    models: {
      providers: { fake: { base_url: llm.baseUrl, api_key: "sk-test" } },
      primary: "fake/test-model",
      max_retries: 0,
      pricing: { "fake/test-model": { input: 3, output: 15 } },
    },
    gateway: { token: TOKEN },
    // One limit, so the usage view shows spend against it.
    budgets: { overall: { daily_usd: 5 } },
    // Short sessions can be compacted (the test compacts one of six messages).
    agents: { defaults: { compact: { keep_last_n: 2 } } },
    // Every command waits for the owner (inside the sandbox commands otherwise run without asking).
    tools: { exec: { ask: "always" } },
    channels: {
      telegram: {
        enabled: true,
        token: tg.token,
        api_root: tg.apiRoot,
        dm_policy: "allowlist",
        allow_from: [owner.id],
      },
    },
    cron: {
      jobs: [{ id: "morning", cron: "0 8 * * *", message: "Morning summary, please.", deliver: "none" }],
    },
  };
}

async function shoot(name: string): Promise<void> {
  // Let the chart and lists settle after the last event-driven reload.
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(300);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await page.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

async function go(route: string, ready: string): Promise<void> {
  await page.evaluate((r) => (location.hash = r), route);
  await page.waitForSelector(ready, { timeout: 20_000 });
}

describe.skipIf(!chromium)("the owner's console in headless Chromium", () => {
  beforeAll(async () => {
    if (!existsSync(join(REPO_ROOT, "dist", "console", "index.html")))
      execFileSync(process.execPath, [join(REPO_ROOT, "cmd", "build-console.mjs")], { cwd: REPO_ROOT });
    mkdirSync(SHOTS, { recursive: true });
    llm = await startFakeOpenAI();
    tg = await startFakeTelegram();
    d = await startDaemonProcess({ config: daemonConfig() });
    browser = await launchChromium(chromium!);
    page = await browser.newPage({ viewport: DESKTOP });
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await cleanupDaemons();
    await tg?.close();
    await llm?.close();
  });

  it("logs in through the link, and every view works against the running daemon", async () => {
    const foreign: string[] = [];
    // No script error and no Content-Security-Policy violation on any view.
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("request", (r) => {
      if (!r.url().startsWith(d.url) && !r.url().startsWith("data:")) foreign.push(r.url());
    });

    // `familiar dashboard --console`: the token rides in the fragment, is stored, and leaves the address bar.
    let out = "";
    const code = await dashboardCommand(
      { config: d.configPath, console: true },
      (t) => (out += t),
      () => undefined,
    );
    expect(code).toBe(0);
    const link = out.trim();
    expect(link).toBe(`${d.url}/console/#token=${TOKEN}`);
    await page.goto(link);
    await page.waitForSelector('#conn[data-state="open"]', { timeout: 20_000 });
    expect(page.url()).not.toContain(TOKEN);
    expect(await page.evaluate(() => localStorage.getItem("familiar.token"))).toBe(TOKEN);

    // Overview: Telegram is connected.
    await page.waitForSelector('[data-channel="telegram"] .badge[data-state="connected"]', {
      timeout: 30_000,
    });
    await shoot("overview");

    // A chat message from the owner on Telegram; its cost shows on today's usage.
    llm.enqueue({ text: "Hello from the fake model." });
    tg.pushText(owner, "hello console");
    await waitFor(
      () => tg.visible(owner.id).some((m) => m.text.includes("Hello from the fake model.")),
      30_000,
    );
    // By keyboard: the menu is links, Enter opens the view and focus moves to its content.
    await page.focus('nav a[href="#/usage"]');
    await page.keyboard.press("Enter");
    await page.waitForSelector("#usage-chart canvas", { timeout: 20_000 });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    await page.waitForFunction(
      () =>
        Number(document.querySelector("#usage-chart [data-today-cost]")?.getAttribute("data-today-cost")) > 0,
      undefined,
      { timeout: 20_000 },
    );
    expect(await page.textContent("#today-cost")).toMatch(/^\$0\.0\d+/);
    // Spend against the budget limit, from usage.budgets: the turn's cost is counted.
    await page.waitForFunction(
      () =>
        Number(
          document.querySelector('#budgets [data-limit="overall:daily_usd"]')?.getAttribute("data-fraction"),
        ) > 0,
      undefined,
      { timeout: 20_000 },
    );
    expect(await page.textContent("#budgets")).toContain("$5.00");
    await shoot("usage");

    // Its call tree, from the most expensive sessions list.
    await page.click("#top-sessions .trace-link");
    await page.waitForSelector('#trace li[data-kind="model"]', { timeout: 20_000 });
    expect(await page.textContent("#trace li[data-kind='model']")).toContain("fake/test-model");
    expect(await page.textContent("#trace-totals")).toMatch(/1 model call/);
    await shoot("trace");

    // An exec outside the allow list waits for the owner; approving it in the console runs it.
    llm.enqueue(
      { toolCalls: [{ name: "exec", arguments: { command: "touch approved-by-console.txt" } }] },
      { text: "The file is made." },
    );
    tg.pushText(owner, "please make the file");
    // The menu counts it from any view.
    await page.waitForSelector('nav a[href="#/approvals"] .count', { timeout: 20_000 });
    await go("#/approvals", "[data-approval]");
    expect(await page.textContent("[data-approval] pre")).toContain("touch approved-by-console.txt");
    await shoot("approvals");
    await page.click("[data-approval] button:has-text('Approve')");
    await waitFor(() => existsSync(join(d.workspace, "approved-by-console.txt")), 30_000);
    await waitFor(() => tg.visible(owner.id).some((m) => m.text.includes("The file is made.")), 30_000);
    await page.waitForSelector("[data-approval]", { state: "detached", timeout: 10_000 });
    // Audited: the log names the decision and the console client.
    await waitFor(
      () =>
        d
          .stdoutLines()
          .some((l) => /approval settled over the gateway/.test(l) && /"client":"console"/.test(l)),
      10_000,
    );

    // Cron: run the job now and see the run listed.
    llm.enqueue({ text: "Good morning! Nothing urgent." });
    await go("#/cron", '[data-job="morning"]');
    await page.click('[data-job="morning"] button:has-text("Run now")');
    await page.click('[data-job="morning"] button:has-text("Runs")');
    await page.waitForSelector('[data-runs-of="morning"] tr.run[data-status="ok"]', { timeout: 30_000 });
    await page.waitForSelector("#heartbeat");
    // A runtime job: added from the form, paused, resumed and removed.
    await page.fill('input[placeholder="daily-summary"]', "tea-time");
    await page.selectOption("form.stack select", "every");
    await page.fill('input[placeholder="30m"]', "4h");
    await page.fill("form.stack textarea", "Remind me to drink tea.");
    await page.click('button:has-text("Add job")');
    await page.waitForSelector('[data-job="tea-time"]', { timeout: 10_000 });
    await page.click('[data-job="tea-time"] button:has-text("Pause")');
    await page.waitForSelector('[data-job="tea-time"] .badge[data-state="paused"]', { timeout: 10_000 });
    await page.click('[data-job="tea-time"] button:has-text("Resume")');
    await page.waitForSelector('[data-job="tea-time"] button:has-text("Pause")', { timeout: 10_000 });
    page.once("dialog", (dlg) => void dlg.accept());
    await page.click('[data-job="tea-time"] button:has-text("Remove")');
    await page.waitForSelector('[data-job="tea-time"]', { state: "detached", timeout: 10_000 });
    await shoot("cron");

    // Sessions, a transcript with the folded tool call, agents and logs.
    await go("#/sessions", ".session-list li");
    await page.fill("#session-q", "make the file");
    await page.press("#session-q", "Enter");
    await page.waitForFunction(() => document.querySelectorAll(".session-list li").length === 1, undefined, {
      timeout: 10_000,
    });
    await shoot("sessions");
    await page.click(".session-list li a");
    await page.waitForSelector("#transcript details.toolcall", { timeout: 20_000 });
    expect(await page.textContent("#transcript details.toolcall summary")).toContain("exec");
    expect(await page.isVisible("#transcript details.toolcall pre")).toBe(false);
    await shoot("session");
    // Compact it from the console: the old session links to its successor and back.
    llm.enqueue({ text: "Summary: the owner said hello and asked for a file, which was made." });
    await page.click('#session-head button:has-text("Compact")');
    await page.click("#lineage a:has-text('successor')", { timeout: 20_000 });
    await page.waitForSelector("#lineage a:has-text('predecessor')", { timeout: 20_000 });
    await page.waitForSelector("#transcript .msg.system, #summaries details", { timeout: 20_000 });
    await go("#/agents", '[data-agent="main"]');
    await shoot("agents");
    await go("#/logs", ".log li");
    await page.selectOption('select[aria-label="minimum level"]', "40");
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll(".log li")).every((li) =>
        /warn|error|fatal/.test(li.getAttribute("data-level") ?? ""),
      ),
    );
    await shoot("logs");

    // A bad edit of config.yaml: the overview shows the rejection, naming the key, live.
    await go("#/overview", '[data-channel="telegram"]');
    const cfg = JSON.parse(readFileSync(d.configPath, "utf8")) as { agents?: Record<string, unknown> };
    cfg.agents = { ...cfg.agents, max_concurrent: 0 };
    writeFileSync(d.configPath, JSON.stringify(cfg, null, 2));
    await page.waitForSelector("#config-error", { timeout: 20_000 });
    expect(await page.textContent("#config-error")).toContain("max_concurrent");
    await shoot("config-error");

    // Nothing was fetched from anywhere but the daemon.
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
  }, 240_000);

  it("a wrong token brings the login form with the server's reason", async () => {
    const p = await browser.newPage({ viewport: PHONE });
    await p.goto(`${d.url}/console/#token=wrong-token`);
    await p.waitForSelector("#login-error", { timeout: 20_000 });
    expect(await p.textContent("#login-error")).toMatch(/invalid gateway token/);
    await p.fill("#token", TOKEN);
    await p.click("button[type=submit]");
    await p.waitForSelector('#conn[data-state="open"]', { timeout: 20_000 });
    await p.close();
  }, 60_000);

  it("reconnects by itself after a daemon restart and shows fresh state", async () => {
    const p = await browser.newPage({ viewport: DESKTOP });
    await p.goto(`${d.url}/console/#token=${TOKEN}`);
    await p.waitForSelector('#conn[data-state="open"]', { timeout: 20_000 });
    const { dir, port } = d;
    await d.stop();
    await p.waitForSelector('#conn:not([data-state="open"])', { timeout: 20_000 });
    // The same data and port, with a valid config again (the first test left a rejected edit).
    d = await startDaemonProcess({ dir, port, config: daemonConfig() });
    await p.waitForSelector('#conn[data-state="open"]', { timeout: 30_000 });
    await p.waitForSelector('[data-channel="telegram"] .badge[data-state="connected"]', { timeout: 30_000 });
    expect(await p.$("#config-error")).toBeNull();
    await p.close();
  }, 90_000);
});
