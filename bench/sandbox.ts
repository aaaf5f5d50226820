/**
 * Sandbox overhead: the time `exec` spends on `true` run under bubblewrap (the daemon's real
 * invocation: namespaces, read-only system binds, masks, prlimit) against `true` run the unsandboxed
 * way (`/bin/sh -c true`), both through the same runShell the exec tool uses, in-process, alternated
 * so load drifts hit both sides alike. `sandboxRuns` pairs (default 200).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { configFromObject } from "../internal/config/load.js";
import { runShell } from "../internal/tools/run-process.js";
import { sandboxInvocation, sandboxSpec } from "../internal/tools/sandbox/sandbox-command.js";
import { probeSandbox } from "../internal/tools/sandbox/sandbox-probe.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { summarize } from "./lib/stats.js";

const ms = (v: number): string => v.toFixed(2);

export async function sandboxBench(o: BenchOptions): Promise<BenchResult> {
  const status = await probeSandbox();
  if (!status.ok)
    return {
      name: "sandbox",
      title: "Sandbox overhead (skipped)",
      rows: [{ metric: "bubblewrap", value: `not available: ${status.problem ?? ""}` }],
      data: { skipped: status.problem ?? true },
    };
  const dir = mkdtempSync(join(tmpdir(), "familiar-bench-sandbox-"));
  try {
    const cfg = configFromObject({}, dir);
    const signal = new AbortController().signal;
    const run = async (sandboxed: boolean): Promise<number> => {
      const t0 = performance.now();
      const invocation = sandboxed
        ? sandboxInvocation(
            status,
            sandboxSpec(cfg, status, { workspace: dir, network: false, hide: [], cpuS: 60 }),
            ["/bin/sh", "-c", "true"],
          )
        : undefined;
      const r = await runShell("true", {
        cwd: dir,
        timeoutMs: 60_000,
        maxOutput: 1000,
        signal,
        ...(invocation ? { invocation } : {}),
      });
      if (r.code !== 0) throw new Error(`true exited ${String(r.code)}: ${r.output}`);
      return performance.now() - t0;
    };
    for (let i = 0; i < 10; i++) await run(i % 2 === 0); // warm the page cache on both paths
    const plain: number[] = [];
    const boxed: number[] = [];
    for (let i = 0; i < o.sandboxRuns; i++) {
      plain.push(await run(false));
      boxed.push(await run(true));
    }
    const p = summarize(plain);
    const b = summarize(boxed);
    return {
      name: "sandbox",
      title: `Sandbox overhead (${status.version ?? "bwrap"}, ${o.sandboxRuns} runs each)`,
      rows: [
        { metric: "exec `true` unsandboxed, p50 / p90 ms", value: `${ms(p.p50)} / ${ms(p.p90)}` },
        { metric: "exec `true` in the sandbox, p50 / p90 ms", value: `${ms(b.p50)} / ${ms(b.p90)}` },
        {
          metric: "added by the sandbox, p50 ms",
          value: ms(b.p50 - p.p50),
          // Mostly bwrap's own namespace and mount setup (~20-25 ms on the loaded 2-core Firecracker
          // VM of BENCHMARKS.md, a few ms on an idle machine); prlimit is one more exec (~5 ms there).
          target: "< 50 ms",
          pass: b.p50 - p.p50 < 50,
        },
      ],
      data: { plain: p, sandboxed: b, addedP50Ms: b.p50 - p.p50 },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
