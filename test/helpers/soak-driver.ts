/**
 * The soak load: a realistic day of a personal assistant, compressed, against a running daemon child
 * process. Used by the long soak benchmark (bench/soak.ts, hours, the built daemon) and by the short
 * leak check in the suite (test/soak-short.test.ts, the sources).
 *
 * Each tick: a chat turn on the gateway (HTTP API, 20 sessions), a Telegram message (fake Telegram), a
 * Discord DM (fake Discord); every 5th gateway turn asks for a tool call; the model fails now and then
 * (HTTP 500); a small context window makes long sessions compact. A cron job and the heartbeat run
 * every minute (config from {@link soakConfig}). Every `reconnectEvery` ticks both fake platforms drop
 * the bot's connection (Discord socket terminated, Telegram polls dropped). Samples record RSS, heap,
 * active handles by type, process listeners, database and WAL size, and gateway turn latency.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { startFakeOpenAI, lastUserOf, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer } from "../fakes/telegram-server.js";
import { startFakeDiscord, type FakeDiscord } from "../fakes/discord-server.js";

/** The daemon under test, as the soak needs it. */
export interface SoakTarget {
  url: string;
  pid: number;
  dataDir: string;
  token: string;
}

/** The fake platforms the daemon talks to. */
export interface SoakFakes {
  ai: FakeOpenAI;
  telegram: FakeTelegramServer;
  discord: FakeDiscord;
  /** Model calls answered so far. */
  modelCalls(): number;
  close(): Promise<void>;
}

/** One sample of the daemon's vital signs. */
export interface SoakSample {
  /** Seconds since the load started. */
  t: number;
  tick: number;
  rssMB: number;
  heapUsedMB: number;
  heapTotalMB: number;
  externalMB: number;
  /** Active libuv resources by type (process.getActiveResourcesInfo() in the daemon). */
  handles: Record<string, number>;
  handlesTotal: number;
  processListeners: number;
  dbMB: number;
  walMB: number;
  /** Gateway turns since the previous sample: count, failures, latency percentiles in ms. */
  turns: number;
  failedTurns: number;
  p50ms: number;
  p95ms: number;
  maxms: number;
  telegramReplies: number;
  discordReplies: number;
  /** Cron runs recorded in the db so far. */
  cronRuns: number;
  /** Model calls since the previous sample. */
  modelRequests: number;
}

export interface SoakOptions {
  /** Stop after this many ticks (or when `seconds` passed, whichever first). */
  ticks: number;
  seconds: number;
  /** Pause between ticks (ms of real time; the load is paced, not a flood). */
  tickMs: number;
  /** Sample every this many ticks. */
  sampleEvery: number;
  reconnectEvery: number;
  /** Share of model calls that fail with HTTP 500. */
  failRate: number;
  /** JSON lines, one sample per line, appended as they come (a long run can be charted meanwhile). */
  out?: string;
  onSample?: (s: SoakSample) => void;
}

const TG_USER = { id: 777001, first_name: "Owner" };
const DISCORD_USER = { id: "700000000000009001", username: "owner" };
const DISCORD_DM = "800000000000009001";

/** Starts the fakes with a model that echoes, calls a tool when asked, summarises, and fails sometimes. */
export async function startSoakFakes(failRate: () => number): Promise<SoakFakes> {
  const ai = await startFakeOpenAI({ maxRecorded: 20 });
  const telegram = await startFakeTelegram();
  const discord = await startFakeDiscord();
  let n = 0;
  ai.setHandler((req) => {
    n++;
    const msgs = req.body?.messages ?? [];
    const sys = msgs[0]?.content;
    if (typeof sys === "string" && /^You (compress|merge|update)/.test(sys))
      return { text: `- Summary ${n}: the owner chatted about the garden, invoices and trains.` };
    // Deterministic "now and then": every 1/failRate-th call fails.
    if (failRate() > 0 && n % Math.round(1 / failRate()) === 0)
      return { error: { status: 500, message: "soak: the provider had a bad moment" } };
    const last = msgs.at(-1);
    const text = lastUserOf(req) ?? "";
    if (last?.role !== "tool" && text.includes("what time"))
      return { toolCalls: [{ name: "current_time", arguments: {} }] };
    return { text: `echo ${n}: ${text} `.padEnd(600, "and the garden needs water, the invoice is paid. ") };
  });
  return {
    ai,
    telegram,
    discord,
    modelCalls: () => n,
    async close() {
      await Promise.all([ai.close(), telegram.close(), discord.close()]);
    },
  };
}

/** The daemon config of the soak (merged over the runner's data dir, workspace and gateway). */
export function soakConfig(f: SoakFakes): Record<string, unknown> {
  return {
    models: {
      providers: { fake: { base_url: f.ai.baseUrl, api_key: "sk-fake" } },
      primary: "fake/soak",
      max_retries: 0,
      timeout_s: 30,
      // Small, so long sessions compact every few dozen turns.
      context_window: 16_384,
    },
    channels: {
      telegram: { enabled: true, token: f.telegram.token, api_root: f.telegram.apiRoot, dm_policy: "open" },
      discord: { enabled: true, token: f.discord.token, api_base: f.discord.apiBase, dm_policy: "open" },
    },
    heartbeat: { every: "1m", target: `telegram:${TG_USER.id}` },
    cron: {
      enabled: true,
      jobs: [{ id: "minutely", cron: "* * * * *", message: "check the garden sensors", deliver: "none" }],
    },
  };
}

/** HEARTBEAT.md with a task, so every heartbeat makes a model call. */
export const SOAK_HEARTBEAT = "# Heartbeat\n\n- Check whether the garden needs watering.\n";

async function metrics(t: SoakTarget): Promise<string> {
  const r = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.token}` } });
  return r.text();
}

function gauge(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\d+(?:\\.\\d+)?)$`, "m").exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

function handles(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^nodejs_active_resources\{type="([^"]+)"\} (\d+)$/gm))
    out[m[1]!] = Number(m[2]);
  return out;
}

function rssMB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Cron runs recorded so far (read-only look at the daemon's db, as `familiar cron runs` does). */
function cronRuns(dataDir: string): number {
  const db = new Database(join(dataDir, "familiar.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM cron_runs").get()?.n ?? 0;
  } finally {
    db.close();
  }
}

function sizeMB(path: string): number {
  return existsSync(path) ? statSync(path).size / 1024 / 1024 : 0;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]!;
}

const r1 = (v: number): number => Math.round(v * 10) / 10;

/** One gateway turn over the OpenAI-compatible API; resolves with its latency, or -1 when it failed. */
async function gatewayTurn(t: SoakTarget, session: string, text: string): Promise<number> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${t.token}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "familiar", user: session, messages: [{ role: "user", content: text }] }),
      signal: AbortSignal.timeout(60_000),
    });
    await r.text();
    return r.ok ? performance.now() - t0 : -1;
  } catch {
    return -1;
  }
}

/** Drives the load; returns every sample. */
export async function runSoak(t: SoakTarget, f: SoakFakes, o: SoakOptions): Promise<SoakSample[]> {
  const samples: SoakSample[] = [];
  if (o.out) {
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, "");
  }
  const start = performance.now();
  let lat: number[] = [];
  let failed = 0;
  let prevModel = f.modelCalls();

  async function sample(tick: number): Promise<void> {
    const text = await metrics(t).catch(() => "");
    const h = handles(text);
    const sorted = [...lat].sort((a, b) => a - b);
    const s: SoakSample = {
      t: r1((performance.now() - start) / 1000),
      tick,
      rssMB: r1(rssMB(t.pid)),
      heapUsedMB: r1(gauge(text, "nodejs_heap_size_used_bytes") / 1048576),
      heapTotalMB: r1(gauge(text, "nodejs_heap_size_total_bytes") / 1048576),
      externalMB: r1(gauge(text, "nodejs_external_memory_bytes") / 1048576),
      handles: h,
      handlesTotal: Object.values(h).reduce((a, b) => a + b, 0),
      processListeners: gauge(text, "nodejs_process_listeners"),
      dbMB: r1(sizeMB(join(t.dataDir, "familiar.db"))),
      walMB: r1(sizeMB(join(t.dataDir, "familiar.db-wal"))),
      turns: lat.length + failed,
      failedTurns: failed,
      p50ms: Math.round(pct(sorted, 0.5)),
      p95ms: Math.round(pct(sorted, 0.95)),
      maxms: Math.round(sorted.at(-1) ?? 0),
      telegramReplies: f.telegram.visible(TG_USER.id).length,
      discordReplies: f.discord.channelMessages(DISCORD_DM).length,
      cronRuns: cronRuns(t.dataDir),
      modelRequests: f.modelCalls() - prevModel,
    };
    prevModel = f.modelCalls();
    lat = [];
    failed = 0;
    samples.push(s);
    if (o.out) appendFileSync(o.out, `${JSON.stringify(s)}\n`);
    o.onSample?.(s);
  }

  await sample(0);
  for (let tick = 1; tick <= o.ticks; tick++) {
    if ((performance.now() - start) / 1000 >= o.seconds) break;
    const session = `soak-${tick % 20}`;
    const ask =
      tick % 5 === 0 ? `what time is it? (${tick})` : `message ${tick} about the garden and the invoices`;
    const turn = gatewayTurn(t, session, ask).then((ms) => {
      if (ms < 0) failed++;
      else lat.push(ms);
    });
    f.telegram.pushText(TG_USER, `telegram ${tick}`);
    if (tick % 2 === 0)
      f.discord.userMessage({ channelId: DISCORD_DM, content: `discord ${tick}`, author: DISCORD_USER });
    if (tick % o.reconnectEvery === 0) {
      f.discord.dropConnection();
      f.telegram.dropPolls(1);
    }
    await Promise.all([turn, new Promise((r) => setTimeout(r, o.tickMs))]);
    if (tick % o.sampleEvery === 0) await sample(tick);
  }
  if (samples.at(-1)?.tick !== o.ticks) await sample(samples.length ? samples.at(-1)!.tick + 1 : 0);
  return samples;
}

/** Least-squares slope of `y` over `x` (per unit of x). */
export function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
