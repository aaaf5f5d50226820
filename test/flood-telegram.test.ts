/**
 * Issue 46, item 9: bounded under a flood. One Telegram chat sends 3,000 messages at once (no pause)
 * to the real daemon, capped at a small heap, while each reply takes longer than a message takes to
 * arrive. The chat's backlog never exceeds `reliability.max_backlog_per_chat` (the queue depth in
 * /metrics, sampled throughout), every message is accounted for (answered, or refused and told), no
 * admitted (stored) message goes unanswered, and the daemon is alive and serving afterwards.
 */
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "./fakes/telegram-server.js";
import { cleanupDaemons, startDaemonProcess } from "./helpers/daemon.js";

const FLOOD = 3000;
const MAX_BACKLOG = 20;
const HEAP_MB = 160;
const owner: FakeUser = { id: 4242, first_name: "Flo" };

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
beforeAll(async () => {
  // Each reply waits 25 ms before its first byte: slower than the flood arrives, so a backlog builds.
  llm = await startFakeOpenAI({ latencyMs: 25 });
  tg = await startFakeTelegram();
});
afterAll(async () => {
  await cleanupDaemons();
  await tg.close();
  await llm.close();
});

/** A gauge's value from a Prometheus text page. */
function gauge(page: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(page);
  if (!m) throw new Error(`no ${name} in /metrics`);
  return Number(m[1]);
}

it("keeps one chat's backlog bounded under thousands of fast messages and tells the sender", async () => {
  const d = await startDaemonProcess({
    config: {
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk-test" } },
        primary: "fake/m",
        max_retries: 0,
      },
      channels: {
        telegram: {
          enabled: true,
          token: tg.token,
          api_root: tg.apiRoot,
          dm_policy: "allowlist",
          allow_from: [owner.id],
          // Final answers only: the flood's own traffic, not preview edits, is what is measured.
          stream: { mode: "off" },
        },
      },
      reliability: { max_backlog_per_chat: MAX_BACKLOG },
      log: { level: "warn" },
    },
    env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` },
    timeoutMs: 60_000,
  });
  const metrics = async (): Promise<string> =>
    (await fetch(`${d.url}/metrics`, { headers: d.headers() })).text();
  expect(gauge(await metrics(), "nodejs_heap_size_limit_bytes")).toBeLessThan((HEAP_MB + 64) * 2 ** 20);

  for (let i = 0; i < FLOOD; i++) tg.pushText(owner, `m${i}`);

  const bot = (): string[] => tg.visible(owner.id).map((m) => m.text);
  const notices = (): string[] => bot().filter((t) => t.startsWith("I still have "));
  const followUps = (): number[] =>
    bot()
      .map((t) => /^While I was catching up I did not take (\d+) more/.exec(t)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number);
  const answers = (): string[] => bot().filter((t) => t.startsWith("echo: "));
  const accounted = (): number =>
    answers().length + notices().length + followUps().reduce((a, b) => a + b, 0);

  // Sample the queue while the flood is handled, until every message is answered or refused and told.
  let maxDepth = 0;
  let maxHeap = 0;
  const deadline = Date.now() + 240_000;
  while (accounted() < FLOOD && Date.now() < deadline) {
    const page = await metrics();
    maxDepth = Math.max(maxDepth, gauge(page, "familiar_queue_depth"));
    maxHeap = Math.max(maxHeap, gauge(page, "nodejs_heap_size_used_bytes"));
  }
  expect(accounted()).toBe(FLOOD);
  expect(maxDepth).toBeGreaterThan(1);
  expect(maxDepth).toBeLessThanOrEqual(MAX_BACKLOG);
  expect(maxHeap).toBeLessThan(HEAP_MB * 2 ** 20);
  // The sender was told: at least one spell, and its notice names the bound.
  expect(notices().length).toBeGreaterThan(0);
  expect(notices()[0]).toContain(`I still have ${MAX_BACKLOG} of your messages to answer`);
  expect(answers().length).toBeLessThan(FLOOD);

  // No admitted message is lost: every user message the daemon stored has its answer, in order.
  const db = new Database(join(d.dataDir, "familiar.db"), { readonly: true });
  const stored = db
    .prepare<[], { content: string }>("SELECT content FROM messages WHERE role = 'user' ORDER BY id")
    .all()
    .map((r) => r.content);
  db.close();
  expect(stored.map((t) => `echo: ${t}`)).toEqual(answers());

  // Still alive and serving: one more message is answered.
  const health = await fetch(`${d.url}/healthz`);
  expect(health.status).toBe(200);
  tg.pushText(owner, "after the flood");
  await tg.waitFor(() => bot().includes("echo: after the flood"), 30_000, "an answer after the flood");
  expect((await d.stop()).code).toBe(0);
}, 300_000);
