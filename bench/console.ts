/**
 * The owner's console: what it weighs and what it costs the daemon. Reports the gzipped size of
 * dist/console (what a browser downloads on a first visit), the daemon's idle RSS before any browser
 * asked, and its RSS after one browser loaded the console's files (the route reads and keeps them
 * only then: the console must cost nothing until it is opened).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { REPO_ROOT } from "../test/helpers/daemon.js";
import { fakeModels, startBenchDaemon } from "./lib/daemon.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { fmtRepeated, repeated } from "./lib/stats.js";

/** Bytes a browser downloads, gzipped as the gateway sends them (index.html compressed here too). */
function consoleGzipBytes(): { gzip: number; raw: number; files: number } {
  const dir = join(REPO_ROOT, "dist", "console");
  const names = [
    "index.html",
    ...readdirSync(join(dir, "assets"))
      .filter((n) => !n.endsWith(".gz"))
      .map((n) => `assets/${n}`),
  ];
  let gzip = 0;
  let raw = 0;
  for (const n of names) {
    const body = readFileSync(join(dir, n));
    raw += statSync(join(dir, n)).size;
    gzip += Math.min(body.length, gzipSync(body, { level: 9 }).length);
  }
  return { gzip, raw, files: names.length };
}

export async function consoleBench(o: BenchOptions): Promise<BenchResult> {
  const size = consoleGzipBytes();
  const openai = await startFakeOpenAI({ maxRecorded: 10 });
  const idle: number[] = [];
  const served: number[] = [];
  try {
    for (let i = 0; i < Math.max(1, Math.min(o.coldStartRuns, 3)); i++) {
      const d = await startBenchDaemon({
        config: { models: fakeModels(openai.baseUrl) },
        nodeFlags: o.nodeFlags,
      });
      try {
        await new Promise((r) => setTimeout(r, 2000));
        idle.push(d.rssMB());
        const html = await (
          await fetch(`${d.url}/console/`, { headers: { "accept-encoding": "gzip" } })
        ).text();
        for (const m of html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g))
          await (
            await fetch(`${d.url}/console/${m[1]}`, { headers: { "accept-encoding": "gzip" } })
          ).arrayBuffer();
        await new Promise((r) => setTimeout(r, 1000));
        served.push(d.rssMB());
      } finally {
        await d.stop();
      }
    }
  } finally {
    await openai.close();
  }
  const a = repeated(idle);
  const b = repeated(served);
  return {
    name: "console",
    title: `The owner's console: download size and daemon memory (${idle.length} runs)`,
    rows: [
      {
        metric: "console download, gzipped KiB (raw KiB, files)",
        value: `${(size.gzip / 1024).toFixed(1)} (${(size.raw / 1024).toFixed(1)}, ${size.files})`,
        target: "< 60",
        pass: size.gzip < 60 * 1024,
      },
      {
        metric: "idle RSS 2 s after start, no browser, MB",
        value: fmtRepeated(a),
        target: "< 90",
        pass: a.median < 90,
      },
      {
        metric: "RSS after one browser loaded the console, MB",
        value: fmtRepeated(b),
        target: "idle + < 5",
        pass: b.median - a.median < 5,
      },
    ],
    data: { gzipBytes: size.gzip, rawBytes: size.raw, idleRssMB: a, servedRssMB: b },
  };
}
