/**
 * `npm run bench`: runs the daemon benchmarks against the built daemon (`npm run build` first) and
 * prints a readable table per benchmark plus one JSON summary.
 *
 *   npm run bench -- [--only a,b] [--quick] [--runs N] [--json out.json] [--cpu-prof DIR]
 *                    [--node-flag FLAG ...] [--size k=v ...]
 *
 * Benchmarks: console, cold-start, idle-breakdown, rss, load-peak, turn-overhead, throughput, telegram, store, memory, prompt-cost, sandbox,
 * compaction-rate, stable-prefix, ttft, pdf-bomb, containment, soak.
 * Sizes (--size name=value): rssTurns, loadTurns, settleSeconds, overheadTurns, throughputTurns, telegramTurns, storeMessages,
 * memoryNotes, embeddingDims, heartbeatTicks, coldStartRuns, sandboxRuns, soakSeconds
 * (the soak writes one JSON line per sample to FAMILIAR_SOAK_OUT when set; chart it with
 * `node --import tsx bench/soak-chart.ts <samples.jsonl> docs/soak-rss.svg`). `--quick` divides the turn counts by 10 for a smoke run.
 * BENCH_KEEP_DIR=1 keeps each daemon's temp dir (config, data, the database) and prints its path, to
 * look at what a load left behind (the database's size, its rows, a query timed on it).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { coldStart } from "./cold-start.js";
import { idleBreakdown } from "./idle-breakdown.js";
import { consoleBench } from "./console.js";
import { compactionRate } from "./compaction-rate.js";
import { containmentBench } from "./containment.js";
import { stablePrefix } from "./stable-prefix.js";
import { machineInfo, load1 } from "./lib/machine.js";
import { pdfBombBench } from "./pdf-bomb.js";
import { formatTable, type BenchOptions, type BenchResult } from "./lib/report.js";
import { loadPeak } from "./load-peak.js";
import { promptCost } from "./prompt-cost.js";
import { rssGrowth } from "./rss-growth.js";
import { sandboxBench } from "./sandbox.js";
import { storeBench } from "./store.js";
import { memoryVectorsBench } from "./memory-vectors.js";
import { telegramLatency } from "./telegram-latency.js";
import { throughput } from "./throughput.js";
import { ttft } from "./ttft.js";
import { turnOverhead } from "./turn-overhead.js";
import { soak } from "./soak.js";

const BENCHES: Record<string, (o: BenchOptions) => Promise<BenchResult>> = {
  "cold-start": coldStart,
  "idle-breakdown": idleBreakdown,
  rss: rssGrowth,
  "load-peak": loadPeak,
  "turn-overhead": turnOverhead,
  throughput,
  telegram: telegramLatency,
  store: storeBench,
  memory: memoryVectorsBench,
  "prompt-cost": promptCost,
  sandbox: sandboxBench,
  "compaction-rate": compactionRate,
  "stable-prefix": stablePrefix,
  ttft,
  "pdf-bomb": pdfBombBench,
  console: consoleBench,
  containment: containmentBench,
  soak,
};

function parseArgs(argv: string[]): { opts: BenchOptions; only: string[]; json?: string } {
  const opts: BenchOptions = {
    runs: 3,
    coldStartRuns: 7,
    rssTurns: 10_000,
    loadTurns: 3_000,
    settleSeconds: 30,
    overheadTurns: 2_000,
    throughputTurns: 2_000,
    telegramTurns: 100,
    storeMessages: 10_000,
    memoryNotes: 10_000,
    embeddingDims: 1536,
    heartbeatTicks: 60,
    soakSeconds: 120,
    sandboxRuns: 200,
    nodeFlags: [],
  };
  let only = Object.keys(BENCHES);
  let json: string | undefined;
  let quick = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} expects a value`);
      return v;
    };
    if (a === "--only") only = val().split(",");
    else if (a === "--json") json = val();
    else if (a === "--quick") quick = true;
    else if (a === "--runs") opts.runs = Number(val());
    else if (a === "--cpu-prof") {
      const dir = resolve(val());
      mkdirSync(dir, { recursive: true });
      opts.nodeFlags.push("--cpu-prof", `--cpu-prof-dir=${dir}`);
    } else if (a === "--node-flag") opts.nodeFlags.push(val());
    else if (a === "--size") {
      const [k, v] = val().split("=");
      if (!k || v === undefined || !(k in opts) || k === "nodeFlags" || !Number.isFinite(Number(v)))
        throw new Error(`--size expects name=number with a known name, got ${k}`);
      (opts as unknown as Record<string, number>)[k] = Number(v);
    } else if (a === "--help" || a === "-h") {
      process.stdout.write(
        `see the header of bench/run.ts; benchmarks: ${Object.keys(BENCHES).join(", ")}\n`,
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (quick)
    for (const k of [
      "rssTurns",
      "loadTurns",
      "overheadTurns",
      "throughputTurns",
      "telegramTurns",
      "sandboxRuns",
    ] as const)
      opts[k] = Math.max(10, Math.round(opts[k] / 10));
  for (const name of only) if (!BENCHES[name]) throw new Error(`unknown benchmark ${name}`);
  return { opts, only, ...(json ? { json } : {}) };
}

const { opts, only, json } = parseArgs(process.argv.slice(2));
const machine = machineInfo();
process.stdout.write(
  `# Familiar benchmarks\nmachine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryMB} MB, ` +
    `Node ${machine.node}, ${machine.os}; load average at start ${machine.loadAtStart.join(" ")}\n\n`,
);
const results: BenchResult[] = [];
const t0 = performance.now();
for (const name of only) {
  const t = performance.now();
  const loadBefore = load1();
  const r = await BENCHES[name]!(opts);
  r.seconds = (performance.now() - t) / 1000;
  r.data.loadBefore = loadBefore;
  r.data.loadAfter = load1();
  results.push(r);
  process.stdout.write(`${formatTable(r)}\n\n`);
}
const summary = {
  when: new Date().toISOString(),
  machine,
  options: opts,
  totalSeconds: Math.round((performance.now() - t0) / 100) / 10,
  results: results.map((r) => ({
    name: r.name,
    seconds: Math.round((r.seconds ?? 0) * 10) / 10,
    ...r.data,
    targets: r.rows
      .filter((x) => x.pass !== undefined)
      .map((x) => ({ metric: x.metric, value: x.value, target: x.target, pass: x.pass })),
  })),
};
const text = JSON.stringify(summary, null, 2);
process.stdout.write(`JSON summary:\n${text}\n`);
if (json) writeFileSync(json, `${text}\n`);
process.exit(0);
