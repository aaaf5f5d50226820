/**
 * Telegram: from an inbound update (pushed into the fake Bot API, delivered to the daemon's long poll)
 * to the final reply text visible in the fake chat (sendMessage or the last editMessageText), with the
 * fake OpenAI server answering instantly. Sequential turns over 20 private chats, default stream config
 * (edit mode: a preview message, then the final edit, paced per chat by the adapter's 50 ms gap).
 */
import { performance } from "node:perf_hooks";
import { startFakeTelegram } from "../test/fakes/telegram-server.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup } from "./lib/setup.js";
import { summarize } from "./lib/stats.js";
import { roundSummary } from "./turn-overhead.js";

async function connected(base: string): Promise<boolean> {
  const h = (await (await fetch(`${base}/healthz`)).json()) as {
    channels?: Record<string, { state: string }>;
  };
  return h.channels?.telegram?.state === "connected";
}

export async function telegramLatency(o: BenchOptions): Promise<BenchResult> {
  const tg = await startFakeTelegram();
  const s = await startGatewaySetup({
    nodeFlags: o.nodeFlags,
    config: {
      channels: { telegram: { enabled: true, token: tg.token, api_root: tg.apiRoot, dm_policy: "open" } },
    },
  });
  // Twenty private chats in turn: the adapter paces sends per chat (50 ms gap), and back-to-back
  // turns in one chat would measure that pacing instead of the daemon.
  const users = Array.from({ length: 20 }, (_, k) => ({
    id: 5551200 + k,
    first_name: `Bench${k}`,
    is_bot: false,
  }));
  try {
    // Wait for the channel to connect before timing anything (the fake records a getUpdates call only
    // when the long poll returns, so ask /healthz instead).
    const deadline = Date.now() + 30_000;
    while (!(await connected(s.daemon.url))) {
      if (Date.now() > deadline) throw new Error(`telegram did not connect\n${s.daemon.tail()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const firsts: number[] = [];
    const turn = async (i: number): Promise<number> => {
      const user = users[(i + 20) % 20]!;
      const replied = (text: string): boolean => tg.visible(user.id).some((m) => m.text.includes(text));
      const before = tg.visible(user.id).length;
      const t0 = performance.now();
      tg.pushText(user, `tg ping ${i}`);
      await tg.waitFor(() => tg.visible(user.id).length > before, 30_000, `first text ${i}`);
      firsts.push(performance.now() - t0);
      await tg.waitFor(() => replied(`echo: tg ping ${i}`), 30_000, `reply ${i}`);
      return performance.now() - t0;
    };
    for (let i = 0; i < 20; i++) await turn(-1 - i); // warm-up (every chat once)
    firsts.length = 0;
    const samples: number[] = [];
    for (let i = 0; i < o.telegramTurns; i++) samples.push(await turn(i));
    const sum = summarize(samples);
    const first = summarize(firsts);
    return {
      name: "telegram",
      title: `Telegram: inbound update to final reply through the fake Bot API, ${o.telegramTurns} turns`,
      rows: [
        {
          metric: "update -> first reply text visible (preview), p50 / p99 ms",
          value: `${first.p50.toFixed(1)} / ${first.p99.toFixed(1)}`,
        },
        { metric: "update -> final reply, p50 ms", value: sum.p50.toFixed(1) },
        { metric: "update -> final reply, p99 ms", value: sum.p99.toFixed(1) },
      ],
      data: { latencyMs: roundSummary(sum), firstTextMs: roundSummary(first), botApiCalls: tg.calls.length },
    };
  } finally {
    await s.close();
    await tg.close();
  }
}
