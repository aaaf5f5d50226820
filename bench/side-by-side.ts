/**
 * Two builds side by side, interleaved, as issue 38 measured them: each started as an executable
 * (`familiar run --config FILE`, what a global install, `npm link` or a container's entry point runs),
 * with no flags and no malloc variables from the launcher, the same fake model and the same load.
 *
 *   node --import tsx bench/side-by-side.ts --a <before>/dist/bundle/familiar.js \
 *     --b dist/bundle/familiar.js [--rounds 2] [--starts 10] [--json out.json]
 *
 * Per round and build (A, B, A, B ...): ready after spawn (`--starts` starts, interleaved A/B, median),
 * then one daemon that idles 10 s, takes 1,000 turns at concurrency 10 and then 3,000 at concurrency
 * 100 (RSS sampled every 50 ms for the peak; daemon CPU per turn from /proc over the c=100 phase), and
 * idles 30 s after the load. The figures are VmRSS; RssAnon beside them.
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { chatTurn, pool } from "./lib/client.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { cpuMs, fakeModels, startBenchDaemon } from "./lib/daemon.js";
import { median } from "./lib/stats.js";
import { load1, machineInfo } from "./lib/machine.js";

interface MemoryRun {
  idle2: number;
  idle10: number;
  idle10Anon: number;
  peak: number;
  peakAnon: number;
  endLoad: number;
  after30: number;
  after30Anon: number;
  cpuPerTurnC100: number;
  turnsPerSecondC100: number;
}

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : fallback;
  if (v === undefined) throw new Error(`--${name} is required`);
  return v;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Gateway only; an explicit token because older builds did not generate one. */
const CONFIG = (baseUrl: string): Record<string, unknown> => ({
  models: fakeModels(baseUrl),
  gateway: { token: "side-by-side-token-0123456789abcdef" },
});

async function readyTimes(builds: string[], starts: number, baseUrl: string): Promise<number[][]> {
  const out = builds.map(() => [] as number[]);
  for (let i = 0; i < starts; i++)
    for (const [k, cli] of builds.entries()) {
      const d = await startBenchDaemon({ cli, asBin: true, config: CONFIG(baseUrl) });
      out[k]!.push(d.startMs);
      await d.stop();
    }
  return out;
}

async function memoryRun(cli: string, baseUrl: string): Promise<MemoryRun> {
  const d = await startBenchDaemon({ cli, asBin: true, config: CONFIG(baseUrl) });
  try {
    await sleep(2000);
    const idle2 = d.rssMB();
    await sleep(8000);
    const idle10 = d.rssMB();
    const idle10Anon = d.anonMB();
    let peak = 0;
    let peakAnon = 0;
    const sample = setInterval(() => {
      if (d.child.exitCode !== null) return;
      peak = Math.max(peak, d.rssMB());
      peakAnon = Math.max(peakAnon, d.anonMB());
    }, 50);
    let cpuPerTurnC100 = 0;
    let turnsPerSecondC100 = 0;
    try {
      let n = 0;
      await pool(1000, 10, async () => {
        const i = n++;
        await chatTurn(d.url, `c10-${i % 10}`, `turn ${i} about the weather and the garden`);
      });
      const cpu0 = cpuMs(d.pid);
      const t0 = performance.now();
      n = 0;
      await pool(3000, 100, async () => {
        const i = n++;
        await chatTurn(d.url, `c100-${i % 100}`, `turn ${i} about the weather and the garden`);
      });
      cpuPerTurnC100 = (cpuMs(d.pid) - cpu0) / 3000;
      turnsPerSecondC100 = 3000 / ((performance.now() - t0) / 1000);
    } finally {
      clearInterval(sample);
    }
    const endLoad = d.rssMB();
    await sleep(30_000);
    return {
      idle2,
      idle10,
      idle10Anon,
      peak,
      peakAnon,
      endLoad,
      after30: d.rssMB(),
      after30Anon: d.anonMB(),
      cpuPerTurnC100,
      turnsPerSecondC100,
    };
  } finally {
    await d.stop();
  }
}

const builds = [resolve(arg("a")), resolve(arg("b"))];
const rounds = Number(arg("rounds", "2"));
const starts = Number(arg("starts", "10"));
const json = process.argv.includes("--json") ? arg("json") : undefined;
const fake = await startFakeOpenAI({ maxRecorded: 10 });
const m = machineInfo();
console.log(`# side by side\nA = ${builds[0]}\nB = ${builds[1]}\nmachine: ${JSON.stringify(m)}`);
const result: { round: number; load1: number; ready: number[][]; memory: MemoryRun[] }[] = [];
try {
  for (let r = 1; r <= rounds; r++) {
    const l = load1();
    const ready = await readyTimes(builds, starts, fake.baseUrl);
    const memory: MemoryRun[] = [];
    for (const cli of builds) memory.push(await memoryRun(cli, fake.baseUrl));
    result.push({ round: r, load1: l, ready, memory });
    const f = (x: number): string => x.toFixed(1);
    console.log(`\n## round ${r} (load average at start ${l})`);
    console.log("| figure | A | B |\n|---|---|---|");
    console.log(
      `| ready after spawn, median of ${starts} (ms) | ${ready.map((x) => f(median(x))).join(" | ")} |`,
    );
    console.log(
      `| idle RSS 2 s / 10 s (MB) | ${memory.map((x) => `${f(x.idle2)} / ${f(x.idle10)}`).join(" | ")} |`,
    );
    console.log(`| peak RSS under load (MB) | ${memory.map((x) => f(x.peak)).join(" | ")} |`);
    console.log(`| RSS at the end of the load (MB) | ${memory.map((x) => f(x.endLoad)).join(" | ")} |`);
    console.log(
      `| RSS 30 s after the load (MB, idle + x) | ${memory.map((x) => `${f(x.after30)} (+${f(x.after30 - x.idle10)})`).join(" | ")} |`,
    );
    console.log(
      `| RssAnon idle 10 s / peak / after 30 s (MB) | ${memory.map((x) => `${f(x.idle10Anon)} / ${f(x.peakAnon)} / ${f(x.after30Anon)}`).join(" | ")} |`,
    );
    console.log(
      `| daemon CPU per turn at c=100 (ms) | ${memory.map((x) => x.cpuPerTurnC100.toFixed(2)).join(" | ")} |`,
    );
    console.log(`| turns/s at c=100 | ${memory.map((x) => f(x.turnsPerSecondC100)).join(" | ")} |`);
  }
} finally {
  await fake.close();
}
if (json) writeFileSync(json, JSON.stringify({ builds, machine: m, result }, null, 2));
