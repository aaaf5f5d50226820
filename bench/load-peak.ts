/**
 * Memory under load and after it (issue 26): gateway-only daemon, idle RSS 2 s and 10 s after start, then
 * `loadTurns` turns at concurrency 100 over 100 persistent sessions while RSS is sampled every 50 ms
 * (peak), RSS when the load stops and `settleSeconds` later (does it come back?), and the daemon's
 * own CPU time per turn (utime + stime from /proc, so the client and the fake do not count).
 * Every reply is checked by `chatTurn`. Figures are VmRSS and, beside them, RssAnon (see `anonOf`).
 */
import { chatTurn, pool } from "./lib/client.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup } from "./lib/setup.js";
import { cpuMs } from "./lib/daemon.js";
import { round } from "./lib/stats.js";

export async function loadPeak(o: BenchOptions): Promise<BenchResult> {
  const s = await startGatewaySetup({ nodeFlags: o.nodeFlags });
  const d = s.daemon;
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const idle = { rss: d.rssMB(), anon: d.anonMB() };
    // Settled idle as well: V8's memory reducer gives back ~10 MB of heap about 8 s after start.
    await new Promise((r) => setTimeout(r, 8000));
    const idle10 = { rss: d.rssMB(), anon: d.anonMB() };
    const peak = { rss: 0, anon: 0 };
    const sample = setInterval(() => {
      if (d.child.exitCode !== null) return;
      peak.rss = Math.max(peak.rss, d.rssMB());
      peak.anon = Math.max(peak.anon, d.anonMB());
    }, 50);
    const cpu0 = cpuMs(d.pid);
    const t0 = performance.now();
    let next = 0;
    try {
      await pool(o.loadTurns, 100, async () => {
        const i = next++;
        await chatTurn(d.url, `load-${i % 100}`, `turn ${i} about the weather and the garden`);
      });
    } finally {
      clearInterval(sample);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpuPerTurn = (cpuMs(d.pid) - cpu0) / o.loadTurns;
    const end = { rss: d.rssMB(), anon: d.anonMB() };
    await new Promise((r) => setTimeout(r, o.settleSeconds * 1000));
    const settled = { rss: d.rssMB(), anon: d.anonMB() };
    const both = (m: { rss: number; anon: number }): string =>
      `${m.rss.toFixed(1)} (anon ${m.anon.toFixed(1)})`;
    return {
      name: "load-peak",
      title: `Memory under load: ${o.loadTurns} turns at concurrency 100, then ${o.settleSeconds} s idle`,
      rows: [
        { metric: "idle RSS 2 s after start, MB", value: both(idle), target: "<= 60", pass: idle.rss <= 60 },
        {
          metric: "idle RSS 10 s after start, MB",
          value: both(idle10),
          target: "<= 60",
          pass: idle10.rss <= 60,
        },
        {
          metric: "peak RSS during the load, MB",
          value: both(peak),
          target: "<= 130",
          pass: peak.rss <= 130,
        },
        { metric: "RSS when the load stops, MB", value: both(end) },
        {
          metric: `RSS ${o.settleSeconds} s after the load, MB`,
          value: both(settled),
          target: `<= idle + 15 (${(idle.rss + 15).toFixed(1)})`,
          pass: settled.rss <= idle.rss + 15,
        },
        {
          metric: "daemon CPU per turn, ms",
          value: cpuPerTurn.toFixed(2),
          target: "<= 0.8",
          pass: cpuPerTurn <= 0.8,
        },
        { metric: "throughput, turns/s", value: (o.loadTurns / seconds).toFixed(0), target: ">= 1200" },
      ],
      data: {
        idle,
        idle10,
        peak,
        end,
        settled,
        cpuMsPerTurn: round(cpuPerTurn),
        turnsPerSecond: round(o.loadTurns / seconds),
      },
    };
  } finally {
    await s.close();
  }
}
