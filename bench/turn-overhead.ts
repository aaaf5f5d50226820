/**
 * Per-turn overhead: what the daemon adds to a turn beyond the model's own time, through
 * /v1/chat/completions, sequential turns (concurrency 1).
 *
 * The model's own time is measured by replaying, right after each turn, the exact request the daemon
 * sent for it (captured body, streamed like the daemon's call) directly from the benchmark client to
 * the fake OpenAI server; the overhead of a turn is its latency minus that direct call. Both paths
 * include one loopback HTTP exchange from the client, so the figure is the daemon's own work plus one
 * extra hop.
 */
import { chatTurn, postJson } from "./lib/client.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup, warmUp } from "./lib/setup.js";
import { round, summarize, type Summary } from "./lib/stats.js";

const fmt = (s: Summary): string => `p50 ${s.p50.toFixed(2)}, p99 ${s.p99.toFixed(2)}`;

export async function turnOverhead(o: BenchOptions): Promise<BenchResult> {
  const s = await startGatewaySetup({ nodeFlags: o.nodeFlags });
  const base = s.daemon.url;
  try {
    await warmUp(base);
    const n = o.overheadTurns;
    // One turn, then the very request the daemon made for it replayed directly at the fake: the
    // model's own time for that body (a long session's body grows with it, and so does its parsing).
    const direct = async (): Promise<number> => {
      const last = s.fake.requests[s.fake.requests.length - 1];
      if (!last?.body) throw new Error("the fake server recorded no request");
      const r = await postJson(`${s.fake.baseUrl}/chat/completions`, JSON.stringify(last.body), {
        authorization: "Bearer sk-fake",
      });
      return r.ms;
    };
    const fresh: number[] = [];
    const freshModel: number[] = [];
    for (let i = 0; i < n; i++) {
      fresh.push((await chatTurn(base, `fresh-${i}`, `hello number ${i}`)).ms);
      freshModel.push(await direct());
    }
    const long: number[] = [];
    const longModel: number[] = [];
    for (let i = 0; i < n; i++) {
      long.push((await chatTurn(base, "one-long-session", `message ${i}`)).ms);
      longModel.push(await direct());
    }
    const body = JSON.stringify(s.fake.requests[s.fake.requests.length - 1]?.body ?? {});
    const freshOver = summarize(fresh.map((x, i) => x - freshModel[i]!));
    const longOver = summarize(long.map((x, i) => x - longModel[i]!));
    const row = (label: string, sum: Summary): BenchResult["rows"] => [
      {
        metric: `${label}: overhead p50, ms`,
        value: sum.p50.toFixed(2),
        target: "<= 1.5",
        pass: sum.p50 <= 1.5,
      },
      { metric: `${label}: overhead p99, ms`, value: sum.p99.toFixed(2), target: "<= 8", pass: sum.p99 <= 8 },
    ];
    return {
      name: "turn-overhead",
      title: `Per-turn overhead through /v1/chat/completions, ${n} sequential turns each`,
      rows: [
        { metric: "new session per turn: turn latency, ms", value: fmt(summarize(fresh)) },
        {
          metric: "new session per turn: same request direct to the fake, ms",
          value: fmt(summarize(freshModel)),
        },
        { metric: "one long session: turn latency, ms", value: fmt(summarize(long)) },
        { metric: "one long session: same request direct to the fake, ms", value: fmt(summarize(longModel)) },
        ...row("new session per turn", freshOver),
        ...row("one long session", longOver),
      ],
      data: {
        turns: n,
        longSessionLastBodyChars: body.length,
        freshDirectMs: roundSummary(summarize(freshModel)),
        longDirectMs: roundSummary(summarize(longModel)),
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
