/**
 * PDF bomb (issue 32): the built daemon gets the 66 KB bomb (100 pages sharing one 21 MB content
 * stream) as a Telegram document, with the shipped limits (`media.documents.parse_timeout_s` 30,
 * `parse_memory_mb` 256). Meanwhile `/healthz` is polled every 50 ms (latency of each answer) and
 * the daemon's RSS is sampled every 100 ms (the reader child's too, separately); another chat writes
 * during the attempt. Reports the /healthz latency max and p99, the daemon's peak RSS during the
 * attempt and its RSS 10 s after, and the child's peak.
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { startFakeTelegram } from "../test/fakes/telegram-server.js";
import { pdfBomb } from "../test/helpers/pdf-bomb.js";
import { rssOf } from "./lib/daemon.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { startGatewaySetup } from "./lib/setup.js";
import { summarize } from "./lib/stats.js";

/** Child pids of `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

async function connected(base: string): Promise<boolean> {
  const h = (await (await fetch(`${base}/healthz`)).json()) as {
    channels?: Record<string, { state: string }>;
  };
  return h.channels?.telegram?.state === "connected";
}

export async function pdfBombBench(_o: BenchOptions): Promise<BenchResult> {
  const tg = await startFakeTelegram();
  const s = await startGatewaySetup({
    config: {
      channels: { telegram: { enabled: true, token: tg.token, api_root: tg.apiRoot, dm_policy: "open" } },
    },
  });
  const owner = { id: 7100001, first_name: "Owner", is_bot: false };
  const friend = { id: 7100002, first_name: "Friend", is_bot: false };
  try {
    const deadline = Date.now() + 30_000;
    while (!(await connected(s.daemon.url))) {
      if (Date.now() > deadline) throw new Error(`telegram did not connect\n${s.daemon.tail()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // One ordinary turn first, so the baseline includes a warm daemon.
    tg.pushText(owner, "hello");
    await tg.waitFor(
      () => tg.visible(owner.id).some((m) => m.text.includes("echo: hello")),
      30_000,
      "warm-up",
    );
    const rssBefore = s.daemon.rssMB();
    // Baseline: the same polling for 10 s with nothing to read, so machine noise shows as such.
    const baseline: number[] = [];
    for (const end = performance.now() + 10_000; performance.now() < end;) {
      const t = performance.now();
      const r = await fetch(`${s.daemon.url}/healthz`);
      await r.arrayBuffer();
      baseline.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 50));
    }
    const base = summarize(baseline);

    const bomb = pdfBomb();
    const fileId = tg.addFile(bomb, "documents/bomb.pdf");
    const latencies: number[] = [];
    let pollFailures = 0;
    let peak = rssBefore;
    let childPeak = 0;
    let done = false;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, s.daemon.rssMB());
        for (const c of childrenOf(s.daemon.pid)) childPeak = Math.max(childPeak, rssOf(c));
      } catch {
        /* a child that just exited */
      }
    }, 100);
    const poller = (async () => {
      while (!done) {
        const t = performance.now();
        try {
          const r = await fetch(`${s.daemon.url}/healthz`, { signal: AbortSignal.timeout(60_000) });
          await r.arrayBuffer();
          if (r.status === 200) latencies.push(performance.now() - t);
          else pollFailures++;
        } catch {
          pollFailures++;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const t0 = performance.now();
    tg.pushDocument(owner, fileId, { name: "bomb.pdf", mime: "application/pdf", caption: "what is this?" });
    await new Promise((r) => setTimeout(r, 2000));
    tg.pushText(friend, "are you there?");
    await tg.waitFor(
      () => tg.visible(owner.id).some((m) => /bomb\.pdf/.test(m.text)),
      600_000,
      "the bomb's reply",
    );
    const handledS = (performance.now() - t0) / 1000;
    const refusal = tg.visible(owner.id).find((m) => /bomb\.pdf/.test(m.text))?.text ?? "";
    await tg.waitFor(
      () => tg.visible(friend.id).some((m) => m.text.includes("echo: are you there?")),
      120_000,
      "friend",
    );
    done = true;
    await poller;
    // RSS afterwards: 10 s later (glibc trims the free top of its heap; see MALLOC_TRIM_THRESHOLD_).
    await new Promise((r) => setTimeout(r, 10_000));
    clearInterval(sampler);
    const rssAfter = s.daemon.rssMB();
    const lat = summarize(latencies);
    return {
      name: "pdf-bomb",
      title: `PDF bomb: a ${(bomb.length / 1024).toFixed(0)} KB PDF (100 pages, one 21 MB stream) sent over Telegram`,
      rows: [
        {
          metric: "/healthz polls answered / failed",
          value: `${latencies.length} / ${pollFailures}`,
          target: "0 failed",
          pass: pollFailures === 0,
        },
        {
          metric: "/healthz latency with nothing to read, p99 / max ms",
          value: `${base.p99.toFixed(1)} / ${base.max.toFixed(1)}`,
        },
        { metric: "/healthz latency p50 / p99 ms", value: `${lat.p50.toFixed(1)} / ${lat.p99.toFixed(1)}` },
        {
          metric: "/healthz latency max ms",
          value: lat.max.toFixed(1),
          target: "< 200 ms",
          pass: lat.max < 200,
        },
        {
          metric: "daemon RSS before / peak / 10 s after, MB",
          value: `${rssBefore.toFixed(0)} / ${peak.toFixed(0)} / ${rssAfter.toFixed(0)}`,
          target: "peak < 250 MB",
          pass: peak < 250,
        },
        { metric: "reader child peak RSS, MB", value: childPeak.toFixed(0) },
        { metric: "bomb answered after, s", value: handledS.toFixed(1) },
      ],
      data: {
        bombBytes: bomb.length,
        healthzMs: { p50: lat.p50, p99: lat.p99, max: lat.max, n: latencies.length },
        baselineHealthzMs: { p50: base.p50, p99: base.p99, max: base.max, n: baseline.length },
        pollFailures,
        rssMB: { before: rssBefore, peak, after: rssAfter },
        childPeakMB: childPeak,
        handledS,
        refusal,
      },
    };
  } finally {
    await s.close();
    await tg.close();
  }
}
