/**
 * Memory: resident set size of the daemon (VmRSS from /proc/<pid>/status) idle after start, after
 * 1,000 turns and after `rssTurns` turns (leak check). Turns go through /v1/chat/completions at
 * concurrency 10 over 100 persistent sessions.
 */
import { authHeaders, chatTurn, pool } from "./lib/client.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup } from "./lib/setup.js";
import { round } from "./lib/stats.js";

export async function rssGrowth(o: BenchOptions): Promise<BenchResult> {
  const s = await startGatewaySetup({ nodeFlags: o.nodeFlags });
  const base = s.daemon.url;
  const first = Math.min(1000, o.rssTurns);
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const idle = s.daemon.rssMB();
    let done = 0;
    const drive = async (upto: number): Promise<void> => {
      await pool(upto - done, 10, async () => {
        const i = done++;
        await chatTurn(base, `rss-${i % 100}`, `message number ${i} about the weather and the garden`);
      });
    };
    // RSS and the JS heap in use (from /metrics) along the way: a leak keeps climbing, caches and
    // longer sessions level off; the heap tells JS objects from native memory (SQLite, buffers).
    const curve: { turns: number; rssMB: number; heapMB: number; heapTotalMB: number; externalMB: number }[] =
      [];
    const sample = async (turns: number): Promise<void> => {
      const text = await (await fetch(`${base}/metrics`, { headers: authHeaders(base) })).text();
      const mb = (name: string): number =>
        round(Number(new RegExp(`^${name} (\\d+)`, "m").exec(text)?.[1] ?? Number.NaN) / 1024 / 1024);
      curve.push({
        turns,
        rssMB: round(s.daemon.rssMB()),
        heapMB: mb("nodejs_heap_size_used_bytes"),
        heapTotalMB: mb("nodejs_heap_size_total_bytes"),
        externalMB: mb("nodejs_external_memory_bytes"),
      });
    };
    await drive(first);
    const at1k = s.daemon.rssMB();
    await sample(first);
    for (const q of [0.25, 0.5, 0.75, 1]) {
      const upto = Math.max(first, Math.round(o.rssTurns * q));
      await drive(upto);
      if (upto > (curve.at(-1)?.turns ?? 0)) await sample(upto);
    }
    const atN = s.daemon.rssMB();
    const growth = ((atN - at1k) / at1k) * 100;
    return {
      name: "rss",
      title: `Memory (RSS), gateway-only config, ${o.rssTurns} turns over 100 sessions`,
      rows: [
        {
          metric: "idle RSS 2 s after start, MB",
          value: idle.toFixed(1),
          target: "< 90 (ours < 80)",
          pass: idle < 90,
        },
        { metric: `RSS after ${first} turns, MB`, value: at1k.toFixed(1) },
        { metric: `RSS after ${o.rssTurns} turns, MB`, value: atN.toFixed(1) },
        {
          metric: "turns: RSS / heap used / heap total / external, MB",
          value: curve
            .map((c) => `${c.turns}: ${c.rssMB} / ${c.heapMB} / ${c.heapTotalMB} / ${c.externalMB}`)
            .join(", "),
        },
        {
          metric: `RSS after ${o.rssTurns} turns vs idle, %`,
          value: (((atN - idle) / idle) * 100).toFixed(1),
          target: "<= 15",
          pass: atN <= idle * 1.15,
        },
        {
          metric: `growth ${first} -> ${o.rssTurns} turns, %`,
          value: growth.toFixed(1),
          target: "< 15",
          pass: growth < 15,
        },
      ],
      data: {
        idleMB: round(idle),
        after1kMB: round(at1k),
        afterNMB: round(atN),
        turns: o.rssTurns,
        growthPct: round(growth),
        curve,
      },
    };
  } finally {
    await s.close();
  }
}
