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
const DESKTOP = { width: 1440, height: 900 };
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
      // One retry after an upstream error (the seeded data has one).
      max_retries: 1,
      pricing: { "fake/test-model": { input: 3, output: 15 } },
    },
    gateway: { token: TOKEN },
    // One limit, so the usage view shows spend against it.
    budgets: { overall: { daily_usd: 5 } },
    // Short sessions can be compacted (the test compacts one of six messages).
    agents: {
      defaults: { compact: { keep_last_n: 2 } },
      // A second agent on a model without a price, with a long name (the tables must hold it).
      "research-assistant-for-long-running-projects": { model: "fake/unpriced-experimental-model-2026" },
    },
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

/**
 * What a person would see wrong on the page as it is now (empty when nothing): checked on every
 * screenshot. Runs in the page.
 */
function layoutProblems(phone: boolean): Promise<string[]> {
  return page.evaluate((phone) => {
    const out: string[] = [];
    const vw = document.documentElement.clientWidth;
    const visible = (e: Element): boolean => {
      const r = e.getBoundingClientRect();
      const cs = getComputedStyle(e);
      return r.width > 0 && r.height > 0 && cs.visibility !== "hidden" && cs.display !== "none";
    };
    const name = (e: Element): string =>
      `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className} "${(e.textContent ?? "").trim().slice(0, 40)}"`;
    if (phone && document.documentElement.scrollWidth > vw)
      out.push(`horizontal overflow: ${document.documentElement.scrollWidth} > ${vw}`);
    // A header, badge, pager or menu label on more than one line is broken (they are short labels).
    const lines = (e: Element): number => {
      const range = document.createRange();
      range.selectNodeContents(e);
      // Line boxes: rects that do not overlap vertically (a smaller badge on the same line overlaps).
      const rects = Array.from(range.getClientRects())
        .filter((r) => r.width > 1)
        .sort((a, b) => a.top - b.top);
      let n = 0;
      let bottom = -Infinity;
      for (const r of rects) {
        if (r.top >= bottom - 2) n++;
        bottom = Math.max(bottom, r.bottom);
      }
      return n;
    };
    for (const e of Array.from(
      document.querySelectorAll(
        "th, .badge, .pager > span, nav.side a, .view-title, .card > header h2, button",
      ),
    ))
      if (visible(e) && !e.closest(".u-legend") && lines(e) > 1)
        out.push(`broken over ${lines(e)} lines: ${name(e)}`);
    // Labels must not overlap one another (one inside the other is fine).
    const labels = Array.from(
      document.querySelectorAll(
        "main h1, main h2, th, .badge, .pager, .pager > *, .card > header, .tl-label, .tl-num, .conn, .top a, .top button",
      ),
    ).filter(visible);
    for (let i = 0; i < labels.length; i++)
      for (let j = i + 1; j < labels.length; j++) {
        const a = labels[i]!,
          b = labels[j]!;
        if (a.contains(b) || b.contains(a)) continue;
        const r = a.getBoundingClientRect(),
          q = b.getBoundingClientRect();
        const ox = Math.min(r.right, q.right) - Math.max(r.left, q.left);
        const oy = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
        if (ox > 2 && oy > 2) out.push(`overlap: ${name(a)} / ${name(b)}`);
      }
    // Every table column visible, or deliberately hidden (a reflowed table's header: cells carry labels).
    for (const t of Array.from(document.querySelectorAll("main table")).filter(visible)) {
      const box = (t.closest(".scroll") ?? t.parentElement!).getBoundingClientRect();
      for (const c of Array.from(t.querySelectorAll("th, td")).filter(visible)) {
        const r = c.getBoundingClientRect();
        if (r.right > box.right + 1 || r.right > vw + 1) out.push(`table cell off the edge: ${name(c)}`);
      }
      if (phone && t.classList.contains("reflow"))
        for (const td of Array.from(t.querySelectorAll("td")).filter(visible))
          if (!td.hasAttribute("data-label")) out.push(`reflowed cell without its column label: ${name(td)}`);
    }
    return out;
  }, phone);
}

/** Screenshots of the view at 1440 and 390 px, light and dark, each checked by layoutProblems. */
async function shoot(name: string): Promise<void> {
  // Let the chart and lists settle after the last event-driven reload.
  await page.waitForTimeout(400);
  const problems: string[] = [];
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [w, vp] of [
      ["1440", DESKTOP],
      ["390", PHONE],
    ] as const) {
      await page.setViewportSize(vp);
      await page.waitForTimeout(250);
      for (const p of await layoutProblems(vp === PHONE)) problems.push(`${name} ${w} ${scheme}: ${p}`);
      await page.screenshot({ path: join(SHOTS, `${name}-${w}-${scheme}.png`), fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize(DESKTOP);
  expect(problems).toEqual([]);
}

/** `/api` with the owner's token (realistic data for the screenshots). */
async function rest<T>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(d.url + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await r.json()) as T;
}

/** Many sessions with long titles and markdown answers, an unpriced agent's chats, and a failed turn. */
async function seedRealisticData(): Promise<{ plan: string; failed: string; retried: string }> {
  const say = async (agent: string, message: string): Promise<string> => {
    const s = await rest<{ id: string }>("POST", `/api/agents/${agent}/sessions`, {});
    await rest("POST", `/api/agents/${agent}/sessions/${s.id}/messages`, { message });
    return s.id;
  };
  // Something to remember, written by a turn (the memory view shows where it came from).
  llm.enqueue(
    {
      toolCalls: [
        {
          name: "memory_write",
          arguments: { text: "The owner prefers tea to coffee, and green tea after 4 pm", kind: "fact" },
        },
      ],
    },
    { text: "I'll remember that." },
  );
  await say("main", "Remember that I prefer tea to coffee, and green tea after 4 pm.");
  const ids: string[] = [];
  for (let i = 1; i <= 7; i++) {
    llm.enqueue({
      text: `## Plan ${i}\n\n- **first** step with \`code\`\n- second step\n\nSee [the docs](https://example.org/docs).`,
      usage: { prompt_tokens: 1200 * i, completion_tokens: 300 * i, total_tokens: 1500 * i },
    });
    ids.push(
      await say(
        "main",
        `Could you draft plan number ${i} for the quarterly review of the household budget and the garden?`,
      ),
    );
  }
  for (let i = 1; i <= 2; i++) {
    llm.enqueue({ text: `Research note ${i}: nothing conclusive yet.` });
    await say(
      "research-assistant-for-long-running-projects",
      `Summarise what is known about topic ${i}, with sources.`,
    );
  }
  llm.enqueue({ error: { status: 400, message: "The model refused: the request was malformed (test)." } });
  const failed = await say("main", "This turn fails at the model.");
  // An upstream hiccup: the router retries the call once (a retry bar on the turn's timeline).
  llm.enqueue(
    { error: { status: 502, message: "Bad gateway from the upstream (test)." } },
    { text: "Answered on the second try." },
  );
  const retried = await say("main", "This answer needs a second try.");
  return { plan: ids[ids.length - 1]!, failed, retried };
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
    // On a phone the menu holds Log out.
    await page.setViewportSize(PHONE);
    await page.click("button.menu");
    expect(await page.isVisible("nav.side .nav-logout")).toBe(true);
    await page.click("button.menu");
    await page.setViewportSize(DESKTOP);
    const seeded = await seedRealisticData();
    // The three questions: what needs me (the failed turn, linked to its trace), today's cost against
    // the budget, and the health tiles.
    await page.waitForSelector('#needs-you [data-attention="failed-turns"] a[href^="#/traces/"]', {
      timeout: 20_000,
    });
    expect(await page.textContent('#needs-you [data-attention="failed-turns"]')).toMatch(
      /1 turn failed today.*This turn fails at the model/s,
    );
    expect(await page.textContent("#today-card")).toMatch(/≈?\$0\.\d\d of \$5\.00/);
    expect(await page.textContent("#health")).toMatch(/Channels.*1 of 1 connected.*Model.*Disk.*Backups/s);
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
    // ≈: the unpriced agent's calls count at budgets.default_price (an estimate).
    expect(await page.textContent("#today-cost")).toMatch(/^≈?\$\d+\.\d\d/);
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
    // Zoomed to the days with data (a week at least), the daily budget drawn as a line.
    expect(await page.textContent("#usage-chart h2")).toBe("Last 7 days");
    expect(await page.getAttribute("#usage-chart .chart", "data-limit")).toBe("5");
    // Sessions by their title and channel, not their key.
    expect(await page.textContent("#top-sessions tbody tr:first-child .sess-title")).toMatch(
      /^Could you draft plan/,
    );
    await shoot("usage");

    // Its call tree, from the most expensive sessions list.
    await page.click("#top-sessions .trace-link");
    await page.waitForSelector('#trace li[data-kind="model"]', { timeout: 20_000 });
    expect(await page.textContent("#trace li[data-kind='model']")).toContain("fake/test-model");
    expect(await page.textContent("#trace-totals")).toMatch(/1 model call/);
    // A model call opens to where its tokens went.
    await page.click('#trace li[data-kind="model"] summary');
    await page.waitForSelector("#trace [data-breakdown] .legend", { timeout: 5_000 });
    expect(await page.textContent("#trace [data-breakdown]")).toMatch(
      /system prompt.*tool schemas.*history/s,
    );
    await shoot("trace");

    // A turn whose model call failed upstream and was retried: the failed attempt is its own bar.
    await go(`#/sessions/main/${seeded.retried}`, "#transcript a.req");
    await page.click("#transcript a.req");
    await page.waitForSelector('#trace li[data-kind="retry"]', { timeout: 20_000 });
    expect(await page.textContent('#trace li[data-kind="retry"] .tl-label')).toMatch(
      /fake\/test-model failed — retried after \d+\s?ms.*Bad gateway/s,
    );
    expect(await page.textContent("#trace .tl-legend")).toContain("failed attempt, retried");
    expect(await page.textContent("#trace-totals [data-retries]")).toContain("↻ 1 model call retried");
    await shoot("trace-retry");

    // The list of recent turns: newest first, the failed one with its cause; costliest; failed only.
    await go("#/traces", "#trace-list tr[data-request]");
    // Each turn named by its question; the retried call counted; an unpriced turn's estimate.
    const retriedRow =
      '#trace-list tr[data-request]:has(a.trace-open:has-text("This answer needs a second try."))';
    expect(await page.textContent(`${retriedRow} [data-retries]`)).toBe("↻ 1 retry");
    expect(await page.textContent('#trace-list tr:has-text("topic 1") td:last-child')).toMatch(/^≈\$0\.\d+$/);
    expect(await page.$$eval("#trace-list tr[data-request]", (r) => r.length)).toBeGreaterThanOrEqual(10);
    expect(await page.textContent('#trace-list tr[data-status="error"]')).toMatch(/malformed/);
    await page.click('#trace-list button:has-text("Failed")');
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll("#trace-list tr[data-request]")).every(
        (r) => r.getAttribute("data-status") === "error",
      ),
    );
    await page.click('#trace-list button:has-text("All")');
    await page.click('#trace-list button:has-text("Costliest")');
    await page.waitForSelector("#trace-list tr[data-request]");
    await shoot("traces");

    // A failed turn shows its cause, with Retry inline; an answer's markdown is rendered, not shown raw.
    await go(`#/sessions/main/${seeded.failed}`, "#transcript .msg.failed .turn-error");
    expect(await page.textContent("#transcript .msg.failed .turn-error")).toMatch(/malformed/);
    await page.waitForSelector('#transcript .msg.failed button:has-text("Retry")');
    await shoot("session-failed");
    llm.enqueue({ text: "Answered on the retry." });
    await page.click('#transcript .msg.failed button:has-text("Retry")');
    await page.waitForSelector('#transcript .msg.assistant:has-text("Answered on the retry.")', {
      timeout: 20_000,
    });
    await go(`#/sessions/main/${seeded.plan}`, "#transcript .md h2");
    expect(await page.textContent("#transcript .md h2")).toBe("Plan 7");
    expect(await page.textContent("#transcript .md")).not.toContain("**");
    await shoot("session-markdown");

    // Memory: the fact, searchable, with the turn that wrote it.
    await go("#/memory", "#memory .memory-list li");
    await page.fill("#memory-q", "green tea");
    await page.waitForFunction(() => document.querySelectorAll("#memory .memory-list li").length === 1);
    expect(await page.textContent("#memory .memory-list li")).toMatch(/written by a turn/);
    await page.fill("#memory-q", "");
    await shoot("memory");
    // The owner corrects the fact: written to MEMORY.md through the door, the date kept.
    await page.click('#memory .memory-list li:has-text("green tea") button:has-text("Edit")');
    await page.fill("#memory .memory-list li textarea", "The owner prefers rooibos in the evening");
    await page.click('#memory .memory-list li button:has-text("Save")');
    await page.waitForSelector('#memory .memory-list li:has-text("rooibos")', { timeout: 10_000 });
    expect(readFileSync(join(d.workspace, "MEMORY.md"), "utf8")).toMatch(
      /- The owner prefers rooibos in the evening \(\d{4}-\d{2}-\d{2}\)/,
    );

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
    // Headed by what it asks, from the chat named by its title with Telegram's icon.
    expect(await page.textContent("[data-approval] h3.ask")).toBe("Run this command?");
    expect(await page.textContent("[data-approval] .ask-from")).toContain("hello console");
    expect(await page.getAttribute("[data-approval] .ask-from .ch", "aria-label")).toBe("Telegram");
    await shoot("approvals");
    // The overview puts it first among what needs the owner, linked to where it is answered.
    await go("#/overview", '#needs-you [data-attention="approvals"]');
    expect(await page.textContent('#needs-you [data-attention="approvals"]')).toMatch(
      /1 approval waits for your answer.*touch approved-by-console\.txt.*Review/s,
    );
    await shoot("overview-needs");
    // The waiting turn is amber in the trace list and says so.
    await go("#/traces", "#trace-list tr[data-waiting]");
    expect(await page.textContent("#trace-list tr[data-waiting] .badge")).toBe("waiting for you");
    expect(await page.textContent("#trace-list tr[data-waiting] a.trace-open")).toContain(
      "please make the file",
    );
    await shoot("traces-waiting");
    // Its transcript shows the call waiting for approval, not a green tick.
    await go("#/sessions", ".session-list li");
    await page.fill("#session-q", "make the file");
    await page.press("#session-q", "Enter");
    await page.waitForFunction(() => document.querySelectorAll(".session-list li").length === 1, undefined, {
      timeout: 10_000,
    });
    await page.click(".session-list li a");
    await page.waitForSelector('#transcript details.toolcall[data-state="waiting"]', { timeout: 20_000 });
    expect(await page.textContent('#transcript details.toolcall[data-state="waiting"] summary')).toContain(
      "waiting for approval",
    );
    // Approve and Deny inline, as in the chat.
    expect(await page.textContent("#transcript [data-approval-inline]")).toMatch(
      /Run this command\?.*Approve.*Deny/s,
    );
    await shoot("session-waiting");
    // On a phone the session's facts and actions fold away; the transcript stays.
    await page.setViewportSize(PHONE);
    await page.waitForFunction(
      () => !document.querySelector<HTMLDetailsElement>("#session-head details.sess-meta")?.open,
    );
    expect(await page.isVisible("#session-head dl.facts")).toBe(false);
    await page.setViewportSize(DESKTOP);
    await page.waitForFunction(
      () => !!document.querySelector<HTMLDetailsElement>("#session-head details.sess-meta")?.open,
    );
    await go("#/approvals", "[data-approval]");
    await page.click("[data-approval] button:has-text('Approve')");
    await waitFor(() => existsSync(join(d.workspace, "desk", "approved-by-console.txt")), 30_000);
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

    // The turn's trace: the wait for the owner is its own bar on the axis, saying how it ended.
    await go("#/traces", "#trace-list tr[data-request]");
    await page.click("#trace-list tr[data-request] a.trace-open");
    await page.waitForSelector('#trace li[data-kind="approval"]', { timeout: 20_000 });
    const wait = await page.textContent('#trace li[data-kind="approval"] .tl-label');
    expect(wait).toMatch(/waiting for approval \d+(\.\d)?\s(ms|s) — approved by owner/);
    expect(wait).toContain("touch approved-by-console.txt");
    const bars = await page.$$eval("#trace .tl-bar", (els) =>
      els.map((e) => ({ cls: e.className, r: e.getBoundingClientRect().toJSON() as DOMRect })),
    );
    const bar = (k: string): DOMRect => bars.find((b) => b.cls.includes(`k-${k}`))!.r;
    // Its own colour (not the tool's), inside the tool call that waited for it, on the same axis.
    expect(
      await page.$eval("#trace .tl-bar.k-approval", (e) => getComputedStyle(e).backgroundImage),
    ).toContain("repeating-linear-gradient");
    expect(bar("approval").left).toBeGreaterThanOrEqual(bar("tool").left - 1);
    expect(bar("approval").right).toBeLessThanOrEqual(bar("tool").right + 1);
    expect(await page.textContent("#trace .tl-legend")).toContain("waiting for approval");
    await shoot("trace-approval");

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
    await page.fill("#session-q", "");
    await page.press("#session-q", "Enter");
    await page.waitForFunction(() => document.querySelectorAll(".session-list li").length > 5);
    await shoot("sessions-all");
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
    // A turn watched live: the answer streams into the session view while it runs.
    llm.enqueue({
      text: "A slow answer, streamed in small pieces so that it can be watched.",
      chunkSize: 4,
      delayMs: 120,
    });
    tg.pushText(owner, "answer slowly, please");
    await page.waitForFunction(
      () => /A slow/.test(document.querySelector("#live-turn .live-text")?.textContent ?? ""),
      undefined,
      {
        timeout: 20_000,
      },
    );
    expect(await page.textContent("#live-turn")).toMatch(/running/);
    await page.screenshot({ path: join(SHOTS, "live-turn-1440-light.png") });
    await page.waitForSelector("#live-turn", { state: "detached", timeout: 30_000 });
    await page.waitForFunction(() =>
      /watched\./.test(document.querySelector("#transcript")?.textContent ?? ""),
    );
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
    // The failed turn's warning links to its trace.
    await page.waitForSelector(".log li a.req", { timeout: 10_000 });
    // Newest first; a record's fields open on demand; a search narrows the lines.
    const times = await page.$$eval(".log li", (ls) => ls.map((l) => Number(l.getAttribute("data-time"))));
    expect(times.length).toBeGreaterThan(1);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(await page.isVisible(".log li .log-fields")).toBe(false);
    await page.click(".log li:has(a.req) summary .m");
    expect(await page.textContent(".log li:has(a.req) .log-fields")).toContain("requestId");
    await page.click(".log li:has(a.req) summary .m");
    await shoot("logs");
    const before = await page.$$eval(".log li", (l) => l.length);
    // Every word must appear (in the message or a field): "502 upstream" is the retried call's line.
    await page.fill("#log-q", "502 upstream");
    await page.waitForFunction((n) => document.querySelectorAll(".log li").length < n, before, {
      timeout: 10_000,
    });
    const found = await page.$$eval(".log li", (l) => l.map((x) => x.textContent ?? ""));
    expect(found.length).toBeGreaterThan(0);
    for (const f of found) expect(f).toMatch(/502.*upstream/is);
    expect(found.join("\n")).toMatch(/retrying fake\/test-model/);
    await page.fill("#log-q", "");

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
