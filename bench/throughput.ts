/**
 * Throughput: turns per second through /v1/chat/completions at concurrency 1, 10 and 100, each worker
 * in its own persistent session, repeated `runs` times on one daemon (median and min-max reported).
 */
import { performance } from "node:perf_hooks";
import { chatTurn } from "./lib/client.js";
import type { BenchOptions, BenchResult, Row } from "./lib/report.js";
import { startGatewaySetup, warmUp } from "./lib/setup.js";
import { fmtRepeated, repeated, type Repeated } from "./lib/stats.js";

async function measure(base: string, total: number, concurrency: number, tag: string): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (next < total) {
        const i = next++;
        await chatTurn(base, `tp-${tag}-c${concurrency}-w${w}`, `turn ${i}`);
      }
    }),
  );
  return total / ((performance.now() - t0) / 1000);
}

export async function throughput(o: BenchOptions): Promise<BenchResult> {
  const s = await startGatewaySetup({ nodeFlags: o.nodeFlags });
  const base = s.daemon.url;
  const out: Record<string, Repeated> = {};
  const rows: Row[] = [];
  try {
    await warmUp(base);
    for (const c of [1, 10, 100]) {
      const total = c === 1 ? Math.min(o.throughputTurns, 500) : o.throughputTurns;
      const runs: number[] = [];
      for (let r = 0; r < o.runs; r++) runs.push(await measure(base, total, c, `r${r}`));
      const rep = repeated(runs);
      out[`c${c}`] = rep;
      rows.push({
        metric: `concurrency ${c} (${total} turns x ${o.runs} runs), turns/s`,
        value: fmtRepeated(rep, 0),
        ...(c === 100 ? { target: ">= 500", pass: rep.median >= 500 } : {}),
      });
    }
  } finally {
    await s.close();
  }
  return {
    name: "throughput",
    title: "Throughput through /v1/chat/completions (median (min-max) of runs)",
    rows,
    data: { turnsPerSecond: out },
  };
}
