/**
 * Time to first token, the daemon's share (issue 38): from the moment the fake model writes the first
 * text delta of a streamed reply to
 * - the first byte of text at a `/v1/chat/completions` streaming client, and
 * - the first visible Telegram message (the preview `sendMessage`, timestamped by the fake Bot API),
 * p50 and p99, at rest and while other sessions keep the daemon busy (c=10 `/v1` turns in the
 * background). Every clock read is `performance.now()` in this process (the fakes run here too), so
 * the figure is the daemon's own latency plus two loopback hops, never the model's.
 *
 * The model streams its reply in pieces 20 ms apart, so the first piece is distinct from the rest.
 */
import { request } from "node:http";
import { performance } from "node:perf_hooks";
import type { RecordedRequest } from "../test/fakes/openai-server.js";
import { startFakeTelegram } from "../test/fakes/telegram-server.js";
import { authHeaders, chatTurn } from "./lib/client.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup, warmUp } from "./lib/setup.js";
import { summarize } from "./lib/stats.js";

/** One streamed `/v1` call; resolves with the time its first text delta arrived. */
function streamFirstText(base: string, user: string, text: string): Promise<number> {
  const body = JSON.stringify({
    model: "familiar",
    stream: true,
    user,
    messages: [{ role: "user", content: text }],
  });
  const u = new URL(`${base}/v1/chat/completions`);
  return new Promise((resolve, reject) => {
    let first = 0;
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...authHeaders(u.href),
        },
      },
      (res) => {
        res.on("data", (c: Buffer) => {
          if (!first && /"content":"[^"]/.test(c.toString("utf8"))) first = performance.now();
        });
        res.on("end", () =>
          first ? resolve(first) : reject(new Error(`no text (status ${res.statusCode})`)),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Keeps `c` `/v1` turns in flight on other sessions until `stop()`. */
function backgroundLoad(base: string, c: number): { stop: () => Promise<void> } {
  let running = true;
  const workers = Array.from({ length: c }, async (_, w) => {
    for (let i = 0; running; i++) await chatTurn(base, `load-${w}`, `load ${i}`).catch(() => undefined);
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(workers);
    },
  };
}

export async function ttft(o: BenchOptions): Promise<BenchResult> {
  const tg = await startFakeTelegram();
  const s = await startGatewaySetup({
    nodeFlags: o.nodeFlags,
    config: {
      channels: { telegram: { enabled: true, token: tg.token, api_root: tg.apiRoot, dm_policy: "open" } },
    },
  });
  const probes = Math.max(20, Math.round(o.telegramTurns / 2));
  const editInterval = 1000; // the shipped telegram.stream.edit_interval_ms
  try {
    await warmUp(s.daemon.url, 100);
    // Probe replies stream slowly; background load answers at once. The probe's request record is
    // kept by its text (the fake keeps only the last 20 records, which load would push out).
    const probeRequests = new Map<string, RecordedRequest>();
    s.fake.setHandler((req) => {
      const msgs = req.body?.messages ?? [];
      const last = msgs[msgs.length - 1];
      const text = typeof last?.content === "string" ? last.content : "";
      if (!/^(ttft|tg) probe \d+$/.test(text)) return undefined;
      probeRequests.set(text, req);
      return { text: "first piece, then the rest of the answer in more pieces", chunkSize: 12, delayMs: 20 };
    });
    const firstTextOf = (probe: string): number => {
      const at = probeRequests.get(probe)?.firstTextAt;
      if (at === undefined) throw new Error(`the fake model recorded no first text for "${probe}"`);
      return at;
    };
    let seq = 0;

    const v1 = async (n: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const probe = `ttft probe ${seq++}`;
        const got = await streamFirstText(s.daemon.url, `ttft-${i % 4}`, probe);
        out.push(got - firstTextOf(probe));
      }
      return out;
    };
    // Twenty chats in turn, so per-chat pacing of the previous reply's edits is not what is measured.
    const tgProbe = async (n: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const user = { id: 7771200 + (i % 20), first_name: `Ttft${i % 20}`, is_bot: false };
        const before = tg.calls.length;
        const seen = tg.visible(user.id).length;
        const probe = `tg probe ${seq++}`;
        tg.pushText(user, probe);
        await tg.waitFor(
          () =>
            tg
              .visible(user.id)
              .slice(seen)
              .some((m) => m.text.includes("the answer in more pieces")),
          30_000,
          `reply ${i}`,
        );
        const shown = tg.calls
          .slice(before)
          .find((c) => c.method === "sendMessage" && String(c.params.chat_id) === String(user.id));
        if (shown?.hr === undefined)
          throw new Error(
            `no preview sendMessage recorded: ${JSON.stringify(tg.calls.slice(before).map((c) => [c.method, c.params.chat_id]))}`,
          );
        out.push(shown.hr - firstTextOf(probe));
      }
      return out;
    };

    await tgProbe(20); // every chat once: its first message is sent, later ones are paced from here
    const restV1 = summarize(await v1(probes));
    const restTg = summarize(await tgProbe(probes));
    const load = backgroundLoad(s.daemon.url, 10);
    let loadV1;
    let loadTg;
    try {
      loadV1 = summarize(await v1(probes));
      loadTg = summarize(await tgProbe(probes));
    } finally {
      await load.stop();
    }
    const f = (x: { p50: number; p99: number }): string => `${x.p50.toFixed(2)} / ${x.p99.toFixed(2)}`;
    return {
      name: "ttft",
      title: `Time to first token, the daemon's share (model's first text delta -> client), ${probes} probes each`,
      rows: [
        {
          metric: "/v1 stream, at rest, p50 / p99 ms",
          value: f(restV1),
          target: "p50 < 5",
          pass: restV1.p50 < 5,
        },
        {
          metric: "/v1 stream, 10 turns in flight, p50 / p99 ms",
          value: f(loadV1),
          target: "p50 < 5",
          pass: loadV1.p50 < 5,
        },
        {
          metric: "Telegram first visible message, at rest, p50 / p99 ms",
          value: f(restTg),
          target: `p50 < ${editInterval + 20} (edit interval + 20)`,
          pass: restTg.p50 < editInterval + 20,
        },
        {
          metric: "Telegram first visible message, 10 turns in flight, p50 / p99 ms",
          value: f(loadTg),
          target: `p50 < ${editInterval + 20}`,
          pass: loadTg.p50 < editInterval + 20,
        },
      ],
      data: { probes, restV1, loadV1, restTg, loadTg },
    };
  } finally {
    s.fake.setHandler(undefined);
    await s.close();
    await tg.close();
  }
}
