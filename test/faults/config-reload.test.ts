/**
 * Fault injection, config: 200 randomly mutated config files (seeded, so a failure replays) are written
 * over the running daemon's config.yaml and applied through hot reload (`ConfigManager.reload`, what
 * the file watcher calls; the watcher itself is on too). Invariants: the daemon never crashes, an
 * invalid file never replaces the live config (the same object stays live), a valid one is live after
 * the reload, the gateway keeps answering, and once a good file is back a turn works again.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { Daemon } from "../../internal/daemon/daemon.js";
import { loadConfigFile } from "../../internal/config/load.js";
import type { Config } from "../../internal/config/schema.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { freePort, waitFor } from "../gateway/harness.js";

/** 200 by default; FAMILIAR_FAULTS_FULL=1 (set by .ci/run) runs 1,000. */
const MUTATIONS = Number(
  process.env.FAMILIAR_FAULTS_CONFIG_N ?? (process.env.FAMILIAR_FAULTS_FULL === "1" ? 1000 : 200),
);
const SEED = Number(process.env.FAMILIAR_FAULTS_SEED ?? 20261123);

/** mulberry32: a small deterministic PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

let fake: FakeOpenAI | undefined;
let daemon: Daemon | undefined;
let dir: string | undefined;
afterAll(async () => {
  await daemon?.stop("test");
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function baseConfig(d: string, port: number, fakeUrl: string): Record<string, Json> {
  return {
    data_dir: join(d, "data"),
    workspace: join(d, "workspace"),
    timezone: "UTC",
    log: { level: "info", pretty: false },
    models: {
      providers: { fake: { base_url: fakeUrl, api_key: "sk-fake", timeout_s: 5 } },
      primary: "fake/primary",
      fallbacks: ["fake/backup"],
      max_retries: 0,
      timeout_s: 10,
    },
    agents: {
      default: "main",
      max_concurrent: 4,
      main: { system_prompt: "Be brief.", max_iterations: 10 },
      helper: { system_prompt: "You help.", tools: ["memory_search"] },
      defaults: { subagents: { max_depth: 3, max_concurrent: 2 } },
    },
    session: { idle_reset: "0" },
    gateway: {
      bind: "127.0.0.1",
      port,
      token: "config-fuzz-token-0123456789",
      max_body_bytes: 262144,
      rate_limit: { max_failures: 1000, window_s: 60 },
    },
    tools: { exec: { security: "deny" }, web: { timeout_s: 5 } },
    // Both chat channels run against a closed loopback port (they keep retrying): mutations toggle and
    // reconfigure them on reload, offline.
    channels: {
      telegram: {
        api_root: "http://127.0.0.1:9",
        token: "123456:fuzz-token",
        enabled: true,
        dm_policy: "open",
        stream: { mode: "edit", edit_interval_ms: 1000 },
      },
      discord: {
        api_base: "http://127.0.0.1:9/api",
        token: "fuzz.discord.token",
        enabled: true,
        dm_policy: "open",
      },
    },
    heartbeat: { every: "30m", target: "none" },
    cron: {
      enabled: true,
      jobs: [
        { id: "daily", cron: "0 9 * * *", message: "daily summary", deliver: "none" },
        { id: "hourly", every: "1h", message: "check in", deliver: "none" },
      ],
    },
    shutdown_timeout_s: 5,
  };
}

/** Paths the mutator must not touch: they would reach out of loopback (real APIs) or spawn programs. */
const FORBIDDEN = [
  /^models\.providers\.[^.]+\.base_url$/,
  /^channels\.[^.]+\.(api_root|api_base|webhook)/,
  /^mcp/,
  /^tools\.web/,
];

function paths(v: Json, prefix = ""): string[] {
  if (v === null || typeof v !== "object") return [prefix];
  const out: string[] = prefix ? [prefix] : [];
  const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
  for (const [k, x] of entries) out.push(...paths(x, prefix ? `${prefix}.${k}` : k));
  return out;
}

function parentOf(root: Json, path: string): { parent: Record<string, Json>; key: string } | undefined {
  const parts = path.split(".");
  let cur: Json | undefined = root;
  for (const p of parts.slice(0, -1)) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, Json>)[p];
  }
  if (cur === null || cur === undefined || typeof cur !== "object") return undefined;
  return { parent: cur as Record<string, Json>, key: parts.at(-1)! };
}

function randomValue(r: () => number): Json {
  const pool: Json[] = [
    null,
    true,
    false,
    0,
    -1,
    1,
    2.5,
    65536,
    1e12,
    "",
    "0",
    "abc",
    "1s",
    "90m",
    "-5m",
    "fake/primary",
    "nope/nothing",
    "echo/echo",
    "${FAMILIAR_UNSET_VAR}",
    "x".repeat(3000),
    "üñí©ødé 🙂",
    "* * * * *",
    [],
    ["a", 1, null],
    {},
    { unexpected: "key" },
  ];
  return pool[Math.floor(r() * pool.length)]!;
}

/** One mutation of the object form (value/type changes, deletions, unknown keys, typos). */
function mutateObject(base: Record<string, Json>, r: () => number): Record<string, Json> {
  const obj = structuredClone(base) as Record<string, Json>;
  const candidates = paths(obj).filter((p) => !FORBIDDEN.some((f) => f.test(p)));
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    const path = candidates[Math.floor(r() * candidates.length)]!;
    const at = parentOf(obj, path);
    if (!at) continue;
    const { parent, key } = at;
    const op = r();
    const rec = parent as Record<string, Json>;
    if (op < 0.35) rec[key] = randomValue(r);
    else if (op < 0.5 && !Array.isArray(parent)) delete rec[key];
    else if (op < 0.65 && !Array.isArray(parent)) {
      rec[`${key}x`] = rec[key] ?? null; // a typo'd key next to (or instead of) the real one
      if (r() < 0.5) delete rec[key];
    } else if (op < 0.8 && typeof rec[key] === "number")
      rec[key] = (rec[key] as number) * (r() < 0.5 ? -1 : 7);
    else if (op < 0.9 && typeof rec[key] === "string")
      rec[key] = `${rec[key] as string}${r() < 0.5 ? ":" : " "}`;
    else if (rec[key] && typeof rec[key] === "object") rec[key] = randomValue(r);
    else rec[key] = typeof rec[key] === "boolean" ? !rec[key] : randomValue(r);
  }
  return obj;
}

/** Text-level damage: truncation, junk bytes, broken indentation, tabs, an empty file. */
function mutateText(text: string, r: () => number): string {
  const at = Math.floor(r() * text.length);
  const op = r();
  if (op < 0.2) return text.slice(0, at);
  if (op < 0.4)
    return `${text.slice(0, at)}${String.fromCharCode(...Array.from({ length: 8 }, () => Math.floor(r() * 256)))}${text.slice(at)}`;
  if (op < 0.55) return text.replace(/\n {2}/g, (m) => (r() < 0.2 ? "\n " : m));
  if (op < 0.7) return text.replace(/\n {2}/, "\n\t");
  if (op < 0.8) return "";
  if (op < 0.9) return `${text}\n${text}`; // duplicate keys
  return `{{{ ${text}`;
}

/** True when the text does not parse, or every enabled channel still points at the closed local port. */
function offline(text: string): boolean {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return true;
  }
  const ch = (doc as { channels?: Record<string, Record<string, unknown> | null> } | null)?.channels;
  if (!ch || typeof ch !== "object") return true;
  const tgOk = !ch.telegram || ch.telegram.enabled === false || ch.telegram.api_root === "http://127.0.0.1:9";
  const dcOk =
    !ch.discord || ch.discord.enabled === false || ch.discord.api_base === "http://127.0.0.1:9/api";
  return tgOk && dcOk;
}

describe(`${MUTATIONS} mutated config files through hot reload`, () => {
  it("never crashes and always keeps a valid config live", async () => {
    fake = await startFakeOpenAI();
    dir = mkdtempSync(join(tmpdir(), "familiar-cfgfuzz-"));
    mkdirSync(join(dir, "workspace"), { recursive: true });
    const port = await freePort();
    const configPath = join(dir, "config.yaml");
    const base = baseConfig(dir, port, fake.baseUrl);
    const goodText = stringify(base);
    writeFileSync(configPath, goodText);
    const sink = new PassThrough();
    const logLines: string[] = [];
    sink.on("data", (c: Buffer) => logLines.push(...c.toString("utf8").split("\n").filter(Boolean)));
    daemon = await Daemon.start({ configPath, watchConfig: true, logDestination: sink, env: {} });
    const mgr = daemon.config;
    const url = `http://127.0.0.1:${port}`;

    const turn = async (text: string): Promise<{ status: number; body: Record<string, unknown> }> => {
      const token = mgr.get().gateway.token;
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: text }] }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect((await turn("before")).body).toMatchObject({
      choices: [{ message: { content: "echo: before" } }],
    });

    const r = rng(SEED);
    let valid = 0;
    let invalid = 0;
    for (let i = 0; i < MUTATIONS; i++) {
      const mutated = mutateObject(base, r);
      let text = stringify(mutated);
      if (r() < 0.3) {
        const damaged = mutateText(text, r);
        // A mangled api_root must never name a real host: keep the damage only when it cannot.
        if (offline(damaged)) text = damaged;
      }
      writeFileSync(configPath, text);
      const before: Config = mgr.get();
      const out = mgr.reload();
      const live = mgr.get();
      if (out.ok) {
        valid++;
        // What is live is exactly what the file validates to (restart-only keys keep their old value).
        const fromFile = loadConfigFile(configPath, {}).config;
        for (const k of ["models", "agents", "session", "heartbeat", "cron", "tools", "log"] as const)
          expect(JSON.stringify(live[k]), `step ${i}: ${k}`).toBe(JSON.stringify(fromFile[k]));
        expect(live.gateway.port).toBe(port);
        expect(live.data_dir).toBe(before.data_dir);
      } else {
        invalid++;
        expect(live, `step ${i}: an invalid file must not replace the live config`).toBe(before);
        expect(out.error).toBeTruthy();
        expect(mgr.error()).toBe(out.error);
      }
      if (i % 20 === 19) {
        // The daemon is alive and its gateway answers (a turn may fail cleanly under a broken model config).
        const h = await fetch(`${url}/healthz`);
        expect([200, 503]).toContain(h.status);
        await h.arrayBuffer();
        // A mutated token a client cannot even put in a header is skipped (fetch refuses it).
        const token = mgr.get().gateway.token;
        if (token !== undefined && !/^[\x21-\x7e]*$/.test(token)) continue;
        const t = await turn(`probe ${i}`);
        if (t.status === 200)
          expect(t.body).toMatchObject({ choices: [{ message: { content: expect.any(String) } }] });
        else expect((t.body.error as { message?: unknown }).message).toEqual(expect.any(String));
      }
    }
    expect(valid + invalid).toBe(MUTATIONS);
    // Every module took every valid config: no listener threw, nothing escaped as uncaught.
    const broken = logLines.filter((l) => /config listener failed|uncaught|unhandled/i.test(l));
    expect(broken).toEqual([]);
    expect(valid).toBeGreaterThan(MUTATIONS / 10);
    expect(invalid).toBeGreaterThan(MUTATIONS / 10);

    // A good file again, picked up by the watcher alone: the daemon is fully back.
    const restored = { ...base, agents: { ...(base.agents as Record<string, Json>), max_concurrent: 3 } };
    writeFileSync(configPath, stringify(restored));
    await waitFor(() => mgr.get().agents.max_concurrent === 3 && mgr.error() === undefined, 15_000);
    const h = await fetch(`${url}/healthz`);
    expect(h.status).toBe(200);
    // The channels lived through every reload (they keep retrying the closed port, offline).
    expect(Object.keys(daemon.channels.statuses()).sort()).toEqual(["discord", "telegram"]);
    expect((await turn("after")).body).toMatchObject({ choices: [{ message: { content: "echo: after" } }] });
  }, 120_000);
});
