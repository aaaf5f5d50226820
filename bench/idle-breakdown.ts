/**
 * Idle memory, broken down (issue 38): where the idle daemon's resident memory is, next to a bare Node
 * started with the same runtime settings (the floor).
 *
 * Two daemons (gateway only; gateway + Telegram + Discord against their fakes) idle for
 * `settleSeconds` (30 by default, at most 60 here; V8's memory reducer collects the start-up garbage some 10 s after start), then: /proc/<pid>/smaps grouped by mapping (the node binary with
 * its ICU data and snapshot, better-sqlite3, sqlite-vec, system libraries, the malloc heap, anonymous
 * memory) and the V8 heap by space from the daemon's own /metrics. The bare Node prints its heap
 * spaces itself.
 *
 *   npm run bench -- --only idle-breakdown
 */
import { spawn } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { startFakeDiscord } from "../test/fakes/discord-server.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { startFakeTelegram } from "../test/fakes/telegram-server.js";
import { fakeModels, startBenchDaemon } from "./lib/daemon.js";
import type { BenchOptions, BenchResult, Row } from "./lib/report.js";

/** Resident kB per group of mappings, and the process's RssAnon/RssFile. */
export type Breakdown = Record<string, number>;

const MB = (kb: number): string => (kb / 1024).toFixed(1);

/** Groups /proc/<pid>/smaps by what is mapped (resident kB). */
export function smapsGroups(pid: number): Breakdown {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const out: Breakdown = {};
  let group = "";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const path = head[1] ?? "";
      group =
        path === exe
          ? "node binary (code, ICU data, snapshot)"
          : path.includes("better_sqlite3") || path.includes("better-sqlite3")
            ? "better-sqlite3 + SQLite (code)"
            : path.includes("vec0")
              ? "sqlite-vec (code)"
              : /\.so(\.|$)/.test(path)
                ? "system libraries (libc, libstdc++ ...)"
                : path === "[heap]"
                  ? "malloc main heap [heap]"
                  : path === "[stack]"
                    ? "main thread stack"
                    : path === "" || path.startsWith("[anon")
                      ? "anonymous (V8 heap, malloc arenas, thread stacks)"
                      : "other mappings";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[group] = (out[group] ?? 0) + Number(rss[1]);
  }
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  for (const f of ["VmRSS", "RssAnon", "RssFile"]) {
    const m = new RegExp(`^${f}:\\s+(\\d+) kB`, "m").exec(status);
    out[f] = m ? Number(m[1]) : 0;
  }
  return out;
}

/** V8 heap by space (used and reserved, bytes) from the daemon's /metrics. */
async function heapSpaces(url: string, token: string): Promise<Record<string, [number, number]>> {
  const text = await (
    await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  ).text();
  const out: Record<string, [number, number]> = {};
  for (const m of text.matchAll(/^nodejs_heap_space_size_(used|total)_bytes\{space="([^"]+)"\} (\d+)$/gm)) {
    const e = (out[m[2]!] ??= [0, 0]);
    e[m[1] === "used" ? 0 : 1] = Number(m[3]);
  }
  const ext = /^nodejs_external_memory_bytes (\d+)$/m.exec(text);
  out["external (Buffers, ArrayBuffers)"] = [Number(ext?.[1] ?? 0), Number(ext?.[1] ?? 0)];
  return out;
}

/** A bare Node with the daemon's runtime settings, idling; it prints its own heap spaces. */
async function bareNode(
  waitMs: number,
): Promise<{ smaps: Breakdown; spaces: Record<string, [number, number]> }> {
  const script = `const v8=require("node:v8");setInterval(()=>{},1e9);setTimeout(()=>{const o={};for(const s of v8.getHeapSpaceStatistics())o[s.space_name]=[s.space_used_size,s.space_size];const e=process.memoryUsage().external;o["external (Buffers, ArrayBuffers)"]=[e,e];process.stdout.write(JSON.stringify(o)+"\\n")},${waitMs})`;
  const child = spawn(
    process.execPath,
    ["--max-old-space-size=96", "--max-semi-space-size=2", "-e", script],
    {
      env: { PATH: process.env.PATH, MALLOC_ARENA_MAX: "2", MALLOC_TRIM_THRESHOLD_: "131072" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const line = await new Promise<string>((res) =>
    child.stdout.once("data", (b: Buffer) => res(b.toString())),
  );
  const smaps = smapsGroups(child.pid!);
  child.kill("SIGKILL");
  return { smaps, spaces: JSON.parse(line) as Record<string, [number, number]> };
}

interface Measured {
  smaps: Breakdown;
  spaces: Record<string, [number, number]>;
}

export async function idleBreakdown(o: BenchOptions): Promise<BenchResult> {
  const waitMs = Math.min(o.settleSeconds, 60) * 1000;
  const openai = await startFakeOpenAI({ maxRecorded: 10 });
  const telegram = await startFakeTelegram();
  const discord = await startFakeDiscord();
  const configs: Record<string, Record<string, unknown>> = {
    "gateway only": { models: fakeModels(openai.baseUrl) },
    "gateway + Telegram + Discord": {
      models: fakeModels(openai.baseUrl),
      channels: {
        telegram: { enabled: true, token: telegram.token, api_root: telegram.apiRoot, dm_policy: "open" },
        discord: { enabled: true, token: discord.token, api_base: discord.apiBase, dm_policy: "open" },
      },
    },
  };
  const measured: Record<string, Measured> = {};
  try {
    measured["bare Node"] = await bareNode(waitMs);
    for (const [name, config] of Object.entries(configs)) {
      const d = await startBenchDaemon({ config });
      try {
        await new Promise((r) => setTimeout(r, waitMs));
        const token = readFileSync(join(d.dataDir, "gateway-token"), "utf8").trim();
        measured[name] = { spaces: await heapSpaces(d.url, token), smaps: smapsGroups(d.pid) };
      } finally {
        await d.stop();
      }
    }
  } finally {
    await Promise.all([openai.close(), telegram.close(), discord.close()]);
  }
  const cols = Object.keys(measured);
  const rows: Row[] = [];
  const add = (metric: string, kb: (m: Measured) => number): void => {
    const v = cols.map((c) => kb(measured[c]!));
    rows.push({ metric, value: `${v.map(MB).join(" | ")} (+${MB(v[1]! - v[0]!)} | +${MB(v[2]! - v[0]!)})` });
  };
  add("VmRSS, MB", (m) => m.smaps.VmRSS ?? 0);
  add("  RssFile (mapped files)", (m) => m.smaps.RssFile ?? 0);
  add("  RssAnon", (m) => m.smaps.RssAnon ?? 0);
  const groups = new Set(cols.flatMap((c) => Object.keys(measured[c]!.smaps)));
  for (const g of [...groups].filter((g) => !["VmRSS", "RssAnon", "RssFile"].includes(g)).sort())
    add(`  smaps: ${g}`, (m) => m.smaps[g] ?? 0);
  const spaces = new Set(cols.flatMap((c) => Object.keys(measured[c]!.spaces)));
  add("V8 heap reserved (all spaces)", (m) =>
    Object.entries(m.spaces)
      .filter(([k]) => !k.startsWith("external"))
      .reduce((a, [, v]) => a + v[1] / 1024, 0),
  );
  for (const s of [...spaces].sort()) {
    add(`  ${s}: used`, (m) => (m.spaces[s]?.[0] ?? 0) / 1024);
    if (!s.startsWith("external")) add(`  ${s}: reserved`, (m) => (m.spaces[s]?.[1] ?? 0) / 1024);
  }
  const rss = (c: string): number => (measured[c]!.smaps.VmRSS ?? 0) / 1024;
  rows.push({
    metric: "idle RSS, gateway only, MB",
    value: rss("gateway only").toFixed(1),
    target: "<= 70",
    pass: rss("gateway only") <= 70,
  });
  rows.push({
    metric: "idle RSS, gateway + Telegram + Discord, MB",
    value: rss("gateway + Telegram + Discord").toFixed(1),
    target: "<= 90",
    pass: rss("gateway + Telegram + Discord") <= 90,
  });
  return {
    name: "idle-breakdown",
    title: `Idle memory after ${waitMs / 1000} s, MB: ${cols.join(" | ")} (daemon minus bare Node)`,
    rows,
    data: measured,
  };
}
