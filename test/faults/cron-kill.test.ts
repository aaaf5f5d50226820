/**
 * Fault injection, cron: the real daemon (a child process) is killed with SIGKILL while a scheduled
 * reminder's turn is running (the fake model hangs on it). After the restart the reminder runs once
 * more, marked as a resume of the interrupted run, and is delivered once through the fake Telegram;
 * a further restart runs it no more.
 */
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lastUserOf, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer } from "../fakes/telegram-server.js";
import { cleanupDaemons, startDaemonProcess } from "../helpers/daemon.js";
import { waitFor } from "../gateway/harness.js";
import { GatewayClient } from "../../internal/gateway/client.js";

let fake: FakeOpenAI | undefined;
let tg: FakeTelegramServer | undefined;
afterAll(async () => {
  await cleanupDaemons();
  await fake?.close();
  await tg?.close();
});

const CHAT = 4242;

interface Row {
  id: number;
  trigger: string;
  status: string;
  resume_of: number | null;
}

function runs(dataDir: string): Row[] {
  const db = new Database(join(dataDir, "familiar.db"), { readonly: true });
  try {
    return db
      .prepare<[], Row>(
        "SELECT id, trigger, status, resume_of FROM cron_runs WHERE job_id = 'mum' ORDER BY id",
      )
      .all();
  } finally {
    db.close();
  }
}

describe("kill -9 during a cron run", () => {
  it("runs the interrupted reminder once more after the restart, not twice", async () => {
    const llm = await startFakeOpenAI();
    fake = llm;
    const bot = await startFakeTelegram();
    tg = bot;
    let hang = true;
    llm.setHandler((req) => {
      const text = lastUserOf(req);
      if (text === "call mum" && hang) return { hang: true };
      return { text: `reminder: ${text}` };
    });
    const calls = () => llm.requests.filter((r) => lastUserOf(r) === "call mum").length;
    const config = {
      models: {
        providers: { fake: { base_url: llm.baseUrl, api_key: "sk-fake" } },
        primary: "fake/m",
        max_retries: 0,
        timeout_s: 120,
      },
      channels: {
        telegram: { enabled: true, token: bot.token, api_root: bot.apiRoot, dm_policy: "open" },
      },
    };
    const first = await startDaemonProcess({ config, timeoutMs: 60_000 });
    // A reminder added at runtime (as the agent's cron tool or `familiar cron add` would), due in 2 s.
    const c = await GatewayClient.connect({
      url: `ws://127.0.0.1:${first.port}/ws`,
      token: first.token(),
      clientName: "cron-kill",
    });
    const at = new Date(Date.now() + 2000).toISOString().replace(/\.\d+Z$/, "Z");
    await c.request("cron.add", { job: { id: "mum", at, message: "call mum", deliver: `telegram:${CHAT}` } });
    await c.close();
    await waitFor(() => calls() === 1, 30_000);
    expect(runs(first.dataDir).map((r) => r.status)).toEqual(["running"]);
    expect((await first.kill9()).signal).toBe("SIGKILL");

    hang = false;
    const second = await startDaemonProcess({ dir: first.dir, port: first.port, config, timeoutMs: 60_000 });
    await bot.waitFor(() => bot.visible(CHAT).length >= 1, 30_000, "the resumed reminder");
    await waitFor(() => runs(second.dataDir).some((r) => r.status === "ok"), 30_000);
    await second.stop();
    const rows = runs(second.dataDir);
    expect(rows.map((r) => [r.trigger, r.status])).toEqual([
      ["schedule", "interrupted"],
      ["resume", "ok"],
    ]);
    expect(rows[1]!.resume_of).toBe(rows[0]!.id);
    expect(calls()).toBe(2);
    const texts = bot.visible(CHAT).map((m) => m.text);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/^\(Late by .*a restart interrupted its first run\.\)\s+reminder: call mum$/);

    // A third start has nothing left to run.
    const third = await startDaemonProcess({ dir: first.dir, port: first.port, config, timeoutMs: 60_000 });
    await waitFor(() => third.stdoutLines().some((l) => l.includes("cron scheduler started")), 30_000);
    await third.stop();
    expect(runs(third.dataDir)).toHaveLength(2);
    expect(calls()).toBe(2);
    expect(bot.visible(CHAT)).toHaveLength(1);
  }, 240_000);
});
