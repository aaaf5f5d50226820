/**
 * Per-turn overhead: what the daemon adds to a turn beyond the model's own time, through
 * /v1/chat/completions, sequential turns (concurrency 1).
 *
 * The model's own time is measured by replaying the exact request the daemon sent to the fake OpenAI
 * server (captured body, streamed like the daemon's call) directly from the benchmark client; the
 * overhead of a turn is its latency minus the median of those direct calls. Both paths include one
 * loopback HTTP exchange from the client, so the figure is the daemon's own work plus one extra hop.
 */
import { chatTurn, postJson } from "./lib/client.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup, warmUp } from "./lib/setup.js";
import { median, round, summarize, type Summary } from "./lib/stats.js";

const fmt = (s: Summary): string => `p50 ${s.p50.toFixed(2)}, p99 ${s.p99.toFixed(2)}`;

export async function turnOverhead(o: BenchOptions): Promise<BenchResult> {
  const s = await startGatewaySetup({ nodeFlags: o.nodeFlags });
  const base = s.daemon.url;
  try {
    await warmUp(base);
    const n = o.overheadTurns;
    const fresh: number[] = [];
    for (let i = 0; i < n; i++) fresh.push((await chatTurn(base, `fresh-${i}`, `hello number ${i}`)).ms);
    const long: number[] = [];
    for (let i = 0; i < n; i++) long.push((await chatTurn(base, "one-long-session", `message ${i}`)).ms);
    // The model's own time: the last request the daemon made, replayed directly.
    const last = s.fake.requests[s.fake.requests.length - 1];
    if (!last?.body) throw new Error("the fake server recorded no request");
    const body = JSON.stringify(last.body);
    const direct: number[] = [];
    for (let i = 0; i < Math.min(n, 1000); i++) {
      const r = await postJson(`${s.fake.baseUrl}/chat/completions`, body, {
        authorization: "Bearer sk-fake",
      });
      direct.push(r.ms);
    }
    const model = median(direct);
    const freshOver = summarize(fresh.map((x) => x - model));
    const longOver = summarize(long.map((x) => x - model));
    const row = (label: string, sum: Summary): BenchResult["rows"] => [
      {
        metric: `${label}: overhead p50, ms`,
        value: sum.p50.toFixed(2),
        target: "< 3 (ours < 2)",
        pass: sum.p50 < 3,
      },
      { metric: `${label}: overhead p99, ms`, value: sum.p99.toFixed(2), target: "< 15", pass: sum.p99 < 15 },
    ];
    return {
      name: "turn-overhead",
      title: `Per-turn overhead through /v1/chat/completions, ${n} sequential turns each`,
      rows: [
        { metric: "model's own time (direct call to the fake), ms", value: fmt(summarize(direct)) },
        { metric: "turn latency, new session per turn, ms", value: fmt(summarize(fresh)) },
        { metric: "turn latency, one long session, ms", value: fmt(summarize(long)) },
        ...row("new session per turn", freshOver),
        ...row("one long session", longOver),
      ],
      data: {
        turns: n,
        requestBodyChars: body.length,
        directMs: roundSummary(summarize(direct)),
        freshLatencyMs: roundSummary(summarize(fresh)),
        longLatencyMs: roundSummary(summarize(long)),
        freshOverheadMs: roundSummary(freshOver),
        longOverheadMs: roundSummary(longOver),
      },
    };
  } finally {
    await s.close();
  }
}

/** A summary with values rounded for the JSON output. */
export function roundSummary(s: Summary): Record<string, number> {
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, round(v, 3)]));
}
