/**
 * Soak: the daemon under a realistic mixed load for `soakSeconds` (test/helpers/soak-driver.ts: chats
 * on the gateway, fake Telegram and fake Discord, tool calls, a cron job and the heartbeat every
 * minute, compaction, reconnects of both platforms, a model that fails now and then). Reports RSS,
 * heap, handles, database and WAL size and gateway latency at the start (after a 10 % warm-up) and the
 * end, and the RSS slope per hour. Flat is the goal. Samples go to FAMILIAR_SOAK_OUT (JSON lines) when
 * set, so a run of hours can be charted while it runs (bench/soak-chart.ts).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startBenchDaemon } from "./lib/daemon.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { round } from "./lib/stats.js";
import {
  SOAK_HEARTBEAT,
  runSoak,
  slope,
  soakConfig,
  startSoakFakes,
  type SoakSample,
} from "../test/helpers/soak-driver.js";

export async function soak(o: BenchOptions): Promise<BenchResult> {
  const fakes = await startSoakFakes(() => 0.03);
  try {
    const d = await startBenchDaemon({
      config: soakConfig(fakes),
      nodeFlags: o.nodeFlags,
      beforeStart: ({ workspace }) => writeFileSync(join(workspace, "HEARTBEAT.md"), SOAK_HEARTBEAT),
    });
    try {
      const token = (await import("node:fs")).readFileSync(join(d.dataDir, "gateway-token"), "utf8").trim();
      const samples = await runSoak({ url: d.url, pid: d.pid, dataDir: d.dataDir, token }, fakes, {
        ticks: Number.MAX_SAFE_INTEGER,
        seconds: o.soakSeconds,
        tickMs: 1000,
        sampleEvery: o.soakSeconds >= 3600 ? 60 : 10,
        reconnectEvery: 300,
        failRate: 0.03,
        ...(process.env.FAMILIAR_SOAK_OUT ? { out: process.env.FAMILIAR_SOAK_OUT } : {}),
        onSample: (s) =>
          process.stderr.write(
            `soak t=${s.t}s rss=${s.rssMB}MB heap=${s.heapUsedMB}MB handles=${s.handlesTotal} db=${s.dbMB}MB wal=${s.walMB}MB p95=${s.p95ms}ms\n`,
          ),
      });
      return report(o, samples);
    } finally {
      await d.stop();
    }
  } finally {
    await fakes.close();
  }
}

function report(o: BenchOptions, samples: SoakSample[]): BenchResult {
  const warm = samples.filter((s) => s.t >= o.soakSeconds * 0.1);
  const first = warm[0] ?? samples[0]!;
  const last = samples.at(-1)!;
  const perHour = slope(warm.map((s) => ({ x: s.t / 3600, y: s.rssMB })));
  const heapPerHour = slope(warm.map((s) => ({ x: s.t / 3600, y: s.heapUsedMB })));
  const turns = samples.reduce((n, s) => n + s.turns, 0);
  const failed = samples.reduce((n, s) => n + s.failedTurns, 0);
  return {
    name: "soak",
    title: `Soak: ${Math.round(last.t / 60)} min of mixed load (gateway, Telegram, Discord, tools, cron, heartbeat, reconnects, model failures)`,
    rows: [
      { metric: "RSS after warm-up -> end, MB", value: `${first.rssMB} -> ${last.rssMB}` },
      {
        metric: "RSS slope after warm-up, MB/hour",
        value: perHour.toFixed(2),
        target: "< 5 (flat)",
        pass: perHour < 5,
      },
      { metric: "heap used after warm-up -> end, MB", value: `${first.heapUsedMB} -> ${last.heapUsedMB}` },
      { metric: "heap slope, MB/hour", value: heapPerHour.toFixed(2) },
      {
        metric: "active handles after warm-up -> end",
        value: `${first.handlesTotal} -> ${last.handlesTotal}`,
        target: "no climb",
        pass: last.handlesTotal <= first.handlesTotal + 5,
      },
      {
        metric: "process listeners after warm-up -> end",
        value: `${first.processListeners} -> ${last.processListeners}`,
      },
      { metric: "db / WAL at end, MB", value: `${last.dbMB} / ${last.walMB}` },
      { metric: "gateway turns (failed by the model's 3 %)", value: `${turns} (${failed})` },
      { metric: "gateway p95 after warm-up -> end, ms", value: `${first.p95ms} -> ${last.p95ms}` },
      { metric: "cron runs recorded", value: String(last.cronRuns) },
      { metric: "Telegram / Discord replies", value: `${last.telegramReplies} / ${last.discordReplies}` },
    ],
    data: {
      seconds: last.t,
      rssSlopeMBPerHour: round(perHour),
      heapSlopeMBPerHour: round(heapPerHour),
      samples,
    },
  };
}
