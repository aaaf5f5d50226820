/**
 * The soak benchmark's short variant in the suite: the real daemon (child process, the sources) under
 * the soak's mixed load (gateway turns with tool calls, fake Telegram and Discord, cron and heartbeat
 * every minute, model failures) for 240 paced ticks with a reconnect of both platforms every 30.
 * Leaks of sockets, timers or process listeners climb with every reconnect and every turn; this
 * asserts they do not: counts at the end against the counts after warm-up, never on time.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupDaemons, startDaemonProcess } from "./helpers/daemon.js";
import {
  SOAK_HEARTBEAT,
  runSoak,
  soakConfig,
  startSoakFakes,
  type SoakFakes,
} from "./helpers/soak-driver.js";

let fakes: SoakFakes | undefined;
afterAll(async () => {
  await cleanupDaemons();
  await fakes?.close();
});

describe("soak, short", () => {
  it("keeps sockets, timers and listeners flat across turns and reconnects", async () => {
    const f = await startSoakFakes(() => 0.03);
    fakes = f;
    const d = await startDaemonProcess({ config: soakConfig(f), timeoutMs: 60_000, noWait: false });
    writeFileSync(join(d.workspace, "HEARTBEAT.md"), SOAK_HEARTBEAT);
    const samples = await runSoak(
      { url: d.url, pid: d.child.pid!, dataDir: d.dataDir, token: d.token() },
      f,
      { ticks: 240, seconds: 600, tickMs: 50, sampleEvery: 30, reconnectEvery: 30, failRate: 0.03 },
    );
    await d.stop();
    const warm = samples[2]!; // after 60 ticks and two reconnects
    const end = samples.at(-1)!;
    const turns = samples.reduce((n, s) => n + s.turns, 0);
    expect(turns).toBeGreaterThanOrEqual(240);
    expect(end.telegramReplies).toBeGreaterThan(100);
    expect(end.discordReplies).toBeGreaterThan(50);
    // Six more reconnects and 180 more turns after warm-up: a leak per reconnect or per turn would
    // show as +6 or more; a socket in flight or a pending timer may differ by a couple.
    for (const type of ["TCPSocketWrap", "Timeout", "TCPWRAP"]) {
      const a = warm.handles[type] ?? 0;
      const b = end.handles[type] ?? 0;
      expect(b, `${type}: ${a} after warm-up, ${b} at the end`).toBeLessThanOrEqual(a + 3);
    }
    expect(end.handlesTotal).toBeLessThanOrEqual(warm.handlesTotal + 4);
    expect(end.processListeners).toBeLessThanOrEqual(warm.processListeners);
  }, 300_000);
});
