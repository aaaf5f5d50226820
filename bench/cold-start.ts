/**
 * Cold start: spawn of `node dist/bundle/familiar.js run` to the first `/healthz` 200, with a realistic
 * config: gateway, Telegram and Discord against their fakes, 5 cron jobs and the 3 bundled skills,
 * and the fake OpenAI server as the provider. Also records idle RSS two seconds after start.
 */
import { startFakeDiscord } from "../test/fakes/discord-server.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { startFakeTelegram } from "../test/fakes/telegram-server.js";
import { fakeModels, startBenchDaemon } from "./lib/daemon.js";
import type { BenchOptions, BenchResult } from "./lib/report.js";
import { fmtRepeated, repeated } from "./lib/stats.js";

/** Five cron jobs of the usual kinds (cron expressions, an interval, a one-shot in the future). */
export const FIVE_CRON_JOBS = [
  {
    id: "morning-brief",
    cron: "0 7 * * *",
    message: "Morning brief: weather and calendar.",
    deliver: "last",
  },
  { id: "weekly-review", cron: "0 18 * * 5", message: "Weekly review of open tasks." },
  { id: "inbox-sweep", every: "2h", message: "Summarise new notes in memory." },
  { id: "backup-reminder", cron: "30 9 1 * *", message: "Remind me to check backups." },
  { id: "one-shot", at: "2099-01-01T09:00:00Z", message: "Happy new year." },
];

export async function coldStart(o: BenchOptions): Promise<BenchResult> {
  const openai = await startFakeOpenAI({ maxRecorded: 10 });
  const telegram = await startFakeTelegram();
  const discord = await startFakeDiscord();
  const config = {
    models: fakeModels(openai.baseUrl),
    channels: {
      telegram: { enabled: true, token: telegram.token, api_root: telegram.apiRoot, dm_policy: "open" },
      discord: { enabled: true, token: discord.token, api_base: discord.apiBase, dm_policy: "open" },
    },
    cron: { enabled: true, jobs: FIVE_CRON_JOBS },
  };
  const starts: number[] = [];
  const idle: number[] = [];
  let channelsUp = 0;
  try {
    for (let i = 0; i < o.coldStartRuns; i++) {
      const d = await startBenchDaemon({ config, nodeFlags: o.nodeFlags });
      try {
        starts.push(d.startMs);
        await new Promise((r) => setTimeout(r, 2000));
        idle.push(d.rssMB());
        // A start only counts as a start when the lazily loaded channels really came up.
        const health = (await (await fetch(`${d.url}/healthz`)).json()) as {
          channels?: Record<string, { state?: string }>;
        };
        const states = Object.values(health.channels ?? {}).map((c) => c.state);
        if (states.length === 2 && states.every((s) => s === "connected" || s === "ok")) channelsUp++;
        else
          process.stderr.write(
            `cold-start: channels not up 2 s after start: ${JSON.stringify(health.channels)}\n`,
          );
      } finally {
        await d.stop();
      }
    }
  } finally {
    await Promise.all([openai.close(), telegram.close(), discord.close()]);
  }
  const start = repeated(starts);
  const rss = repeated(idle);
  return {
    name: "cold-start",
    title: `Cold start (gateway + Telegram + Discord + 5 cron jobs + 3 skills), ${o.coldStartRuns} runs`,
    rows: [
      {
        metric: "spawn -> /healthz 200, ms: median (min-max)",
        value: fmtRepeated(start),
        target: "< 400 (ours < 300)",
        pass: start.median < 400,
      },
      {
        metric: "idle RSS 2 s after start, MB",
        value: fmtRepeated(rss),
        target: "< 90 (ours < 80)",
        pass: rss.median < 90,
      },
      {
        metric: "runs with Telegram and Discord connected 2 s after start",
        value: `${channelsUp}/${o.coldStartRuns}`,
        target: "all",
        pass: channelsUp === o.coldStartRuns,
      },
    ],
    data: { startMs: start, idleRssMB: rss, channelsUp },
  };
}
