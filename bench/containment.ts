/**
 * Containment bookkeeping: what prompt-injection containment adds to a turn, in-process on a real
 * SQLite file with the daemon's own modules and migrations (no model, no sockets), so the figure is
 * the bookkeeping alone. Per turn the daemon does: record the message's taint at admission (inside
 * the admission commit), read the session's taint for the trace, wrap the agent's tools, and pass
 * each tool call through the guard. Measured for one turn with one tool call (a plain read) as the
 * guarded call minus the same call on the bare tool set, in a clean and in a tainted session, plus
 * the cost of a result that taints (one row written).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { configFromObject } from "../internal/config/load.js";
import { systemClock } from "../internal/core/clock.js";
import { allMigrations } from "../internal/daemon/migrations.js";
import { silentLogger } from "../internal/log/logger.js";
import { SessionStore } from "../internal/session/session-store.js";
import { openDatabase } from "../internal/store/db.js";
import { Containment } from "../internal/tools/taint/containment.js";
import type { ToolContext, ToolSet } from "../internal/tools/tool.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { summarize } from "./lib/stats.js";
import { roundSummary } from "./turn-overhead.js";

export async function containmentBench(o: BenchOptions): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "familiar-bench-taint-"));
  const db = openDatabase(join(dir, "data"), { migrations: allMigrations });
  try {
    const config = configFromObject({ data_dir: join(dir, "data"), workspace: join(dir, "ws") }, dir);
    const logger = silentLogger();
    const c = new Containment({
      db,
      clock: systemClock,
      config: () => config,
      logger,
      approvals: { requestDetailed: () => Promise.reject(new Error("the bench never asks")) },
      deliver: async () => undefined,
    });
    const sessions = new SessionStore(db);
    const clean = sessions.create("agent:main:bench:clean", "main");
    const tainted = sessions.create("agent:main:bench:tainted", "main");
    c.taint.add(tainted.id, [{ kind: "web_fetch", detail: "https://evil.example/page" }]);
    const inner: ToolSet = { specs: () => [], execute: async () => ({ content: "file body" }) };
    const call = { id: "c1", name: "read_file", arguments: '{"path":"notes.md"}' };
    const signal = new AbortController().signal;
    const ctxFor = (sessionId: string, key: string, i: number): ToolContext => ({
      sessionKey: key,
      sessionId,
      agentId: "main",
      workspace: config.workspace,
      requestId: `r-${key}-${i}`,
      depth: 0,
      logger,
      requestApproval: async () => "denied",
    });
    const admitTx = db.transaction((sid: string, key: string, i: number) =>
      c.admitted(sid, `r-${key}-${i}`, { channel: "bench", sessionKey: key }),
    );
    const n = Math.max(200, o.overheadTurns);
    const oneTurn = async (sid: string, key: string, i: number): Promise<[number, number]> => {
      // Bare: the tool call alone.
      const t0 = performance.now();
      await inner.execute(call, signal, ctxFor(sid, key, i));
      const bare = performance.now() - t0;
      // Guarded: admission record, the trace's taint read, the wrap, the guarded call.
      const t1 = performance.now();
      admitTx(sid, key, i);
      c.sourcesOf(sid);
      const set = c.wrap(inner, { channel: "bench", sessionKey: key, agentId: "main" });
      await set.execute(call, signal, ctxFor(sid, key, i));
      const guarded = performance.now() - t1;
      return [bare, guarded];
    };
    const run = async (sid: string, key: string): Promise<number[]> => {
      for (let i = 0; i < 200; i++) await oneTurn(sid, key, -i - 1); // warm-up
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const [bare, guarded] = await oneTurn(sid, key, i);
        out.push((guarded - bare) * 1000);
      }
      return out;
    };
    const cleanUs = summarize(await run(clean.id, clean.key));
    const taintedUs = summarize(await run(tainted.id, tainted.key));
    // A result that taints: one web_fetch result in a fresh session (a row written, the cache updated).
    const taints: number[] = [];
    const fetchSet = c.wrap(
      { specs: () => [], execute: async () => ({ content: "[200 https://x.example/]\nhello" }) },
      { channel: "bench", sessionKey: "k" },
    );
    for (let i = 0; i < Math.min(n, 500); i++) {
      const s = sessions.create(`agent:main:bench:t${i}`, "main");
      const t0 = performance.now();
      await fetchSet.execute(
        { id: "f", name: "web_fetch", arguments: `{"url":"https://x.example/${i}"}` },
        signal,
        ctxFor(s.id, s.key, i),
      );
      taints.push((performance.now() - t0) * 1000);
    }
    const taintUs = summarize(taints);
    const us = (x: number): string => x.toFixed(1);
    return {
      name: "containment",
      title: `Containment bookkeeping per turn (one tool call), ${n} turns each, in-process on SQLite`,
      rows: [
        {
          metric: "clean session: added per turn p50, µs",
          value: us(cleanUs.p50),
          target: "<= 50",
          pass: cleanUs.p50 <= 50,
        },
        { metric: "clean session: added per turn p99, µs", value: us(cleanUs.p99) },
        {
          metric: "tainted session (non-sink call): added per turn p50, µs",
          value: us(taintedUs.p50),
          target: "<= 50",
          pass: taintedUs.p50 <= 50,
        },
        { metric: "tainted session: added per turn p99, µs", value: us(taintedUs.p99) },
        { metric: "a result that taints (row written) p50, µs", value: us(taintUs.p50) },
      ],
      data: {
        clean: roundSummary(cleanUs),
        tainted: roundSummary(taintedUs),
        tainting: roundSummary(taintUs),
      },
    };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
