/**
 * Runs the built daemon (`node dist/bundle/familiar.js run`) as a child process on a temp dir, as a user
 * runs it, and times its start: from just before `spawn` to the first `GET /healthz` that answers 200.
 * Also reads the child's resident memory from /proc/<pid>/status.
 */
import { spawn, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { setGatewayToken } from "./client.js";

/** Repository root. */
export const ROOT = resolve(import.meta.dirname, "../..");
/** The entry point a user runs. */
/** The CLI under test; `FAMILIAR_BENCH_CLI` points at another build (before/after comparisons). */
export const DIST_CLI = process.env.FAMILIAR_BENCH_CLI ?? join(ROOT, "dist/bundle/familiar.js");

/**
 * Node flags given to the daemon on top of a plain `node familiar.js run`. None by default: the daemon
 * sets its own runtime settings (cmd/runtime-tuning.ts), so a plain start is what users run.
 * `--node-flag` options come after them and win; `FAMILIAR_BENCH_SHIPPED_FLAGS` sets them (before/after
 * comparisons with a build that did not tune itself: "--max-old-space-size=96 --max-semi-space-size=2").
 */
export const SHIPPED_NODE_FLAGS = (process.env.FAMILIAR_BENCH_SHIPPED_FLAGS ?? "")
  .split(" ")
  .filter((f) => f !== "");

/**
 * Extra environment for the daemon, as space-separated KEY=value pairs. None by default (the daemon
 * sets `MALLOC_ARENA_MAX` and `MALLOC_TRIM_THRESHOLD_` itself); `FAMILIAR_BENCH_SHIPPED_ENV` sets it
 * (before/after comparisons with an older build). `MALLOC_*` variables of the benchmark's own
 * environment come after it and win.
 */
export const SHIPPED_ENV: Record<string, string> = Object.fromEntries(
  (process.env.FAMILIAR_BENCH_SHIPPED_ENV ?? "")
    .split(" ")
    .filter((p) => p.includes("="))
    .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]),
);

export interface BenchDaemonOptions {
  /** Config object merged over the defaults below (JSON is valid YAML). */
  config?: Record<string, unknown>;
  /** Copy the shipped workspace/ template into the temp workspace (default true). */
  defaultWorkspace?: boolean;
  /** Extra node flags for the child, e.g. `--cpu-prof`. */
  nodeFlags?: string[];
  /** The CLI to start (default {@link DIST_CLI}): another build's `dist/bundle/familiar.js`. */
  cli?: string;
  /**
   * Start the CLI as an executable (`familiar run --config FILE`, what a global install, `npm link`
   * or a container's entry point runs: its shebang chooses the interpreter) instead of
   * `node familiar.js run`. The file is made executable as npm does when it links a bin.
   */
  asBin?: boolean;
  /** Called with the data dir before the daemon starts (seeding a store). */
  beforeStart?: (paths: { dir: string; dataDir: string; workspace: string }) => void;
}

export interface BenchDaemon {
  url: string;
  port: number;
  pid: number;
  dir: string;
  dataDir: string;
  workspace: string;
  /** Spawn to first /healthz 200, in ms. */
  startMs: number;
  child: ChildProcess;
  /** Resident set size in MB (VmRSS). */
  rssMB(): number;
  /** Anonymous resident memory in MB (RssAnon): VmRSS without the binary's file pages. */
  anonMB(): number;
  /** Last lines of output, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM, wait for exit, remove the temp dir. */
  stop(): Promise<void>;
}

/** A port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/** Fails early with a clear message when `npm run build` has not been run. */
export function requireDist(): void {
  if (!existsSync(DIST_CLI))
    throw new Error(`${DIST_CLI} is missing: run \`npm run build\` first (the benchmarks measure dist/)`);
}

/** CPU time (user + system) of a process in ms; /proc counts in clock ticks of 10 ms. */
export function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Reads VmRSS of a process in MB. */
export function rssOf(pid: number): number {
  return statusMB(pid, "VmRSS");
}

/**
 * Reads the anonymous part of a process's resident memory (RssAnon) in MB: the heap, SQLite and
 * buffers. VmRSS adds the node binary's file pages, which move by ±10 MB with the machine's page
 * cache (other node processes), so before/after comparisons read this too.
 */
export function anonOf(pid: number): number {
  return statusMB(pid, "RssAnon");
}

function statusMB(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(status);
  if (!m) throw new Error(`no ${field} for pid ${pid}`);
  return Number(m[1]) / 1024;
}

/** One GET /healthz; resolves with the status code or 0 when the connection failed. */
function healthStatus(port: number): Promise<number> {
  return new Promise((res) => {
    const req = request({ host: "127.0.0.1", port, path: "/healthz", agent: false }, (r) => {
      r.resume();
      r.on("end", () => res(r.statusCode ?? 0));
    });
    req.on("error", () => res(0));
    req.setTimeout(2000, () => req.destroy());
    req.end();
  });
}

/** Starts the daemon and waits for /healthz 200 (polled every 2 ms, so start times are exact to ~2 ms). */
export async function startBenchDaemon(opts: BenchDaemonOptions = {}): Promise<BenchDaemon> {
  requireDist();
  const dir = mkdtempSync(join(tmpdir(), "familiar-bench-"));
  const dataDir = join(dir, "data");
  const workspace = join(dir, "workspace");
  // Each build starts with its own shipped workspace template (dist/bundle/familiar.js -> repo root).
  const root = opts.cli ? resolve(dirname(opts.cli), "../..") : ROOT;
  if (opts.defaultWorkspace ?? true) cpSync(join(root, "workspace"), workspace, { recursive: true });
  else mkdirSync(workspace, { recursive: true });
  const port = await freePort();
  const cfg = opts.config ?? {};
  const gateway = (cfg.gateway ?? {}) as Record<string, unknown>;
  const configPath = join(dir, "config.yaml");
  writeFileSync(
    configPath,
    JSON.stringify(
      {
        data_dir: dataDir,
        workspace,
        timezone: "UTC",
        log: { level: "info", pretty: false },
        ...cfg,
        gateway: { bind: "127.0.0.1", port, ...gateway },
      },
      null,
      2,
    ),
  );
  opts.beforeStart?.({ dir, dataDir, workspace });
  const out: string[] = [];
  const env: NodeJS.ProcessEnv = { NO_COLOR: "1" };
  for (const k of ["PATH", "HOME", "TMPDIR", "LANG"]) if (process.env[k]) env[k] = process.env[k];
  Object.assign(env, SHIPPED_ENV);
  // glibc malloc tuning (MALLOC_ARENA_MAX, GLIBC_TUNABLES ...) reaches the daemon, so a launcher's
  // environment can be measured.
  for (const [k, v] of Object.entries(process.env))
    if ((k.startsWith("MALLOC_") || k === "GLIBC_TUNABLES") && v !== undefined) env[k] = v;
  const t0 = performance.now();
  const cli = opts.cli ?? DIST_CLI;
  if (opts.asBin) {
    chmodSync(cli, 0o755);
    // The shebang finds `node` on PATH: the one running the benchmark.
    env.PATH = `${dirname(process.execPath)}:${env.PATH ?? ""}`;
  }
  const child = opts.asBin
    ? spawn(cli, ["run", "--config", configPath], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] })
    : spawn(
        process.execPath,
        [...SHIPPED_NODE_FLAGS, ...(opts.nodeFlags ?? []), cli, "run", "--config", configPath],
        { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] },
      );
  const keep = (chunk: Buffer): void => {
    out.push(chunk.toString("utf8"));
    if (out.length > 2000) out.splice(0, out.length - 2000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const tail = (lines = 30): string => out.join("").split("\n").slice(-lines).join("\n");
  const deadline = Date.now() + 30_000;
  let startMs = -1;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`daemon exited during start\n${tail()}`);
    if ((await healthStatus(port)) === 200) {
      startMs = performance.now() - t0;
      break;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  if (startMs < 0) {
    child.kill("SIGKILL");
    throw new Error(`daemon did not answer /healthz within 30 s\n${tail()}`);
  }
  // The daemon generated its gateway token at start; the load generator sends it like the CLI would.
  const explicit = gateway.token;
  const token =
    typeof explicit === "string" ? explicit : readFileSync(join(dataDir, "gateway-token"), "utf8").trim();
  setGatewayToken(`http://127.0.0.1:${port}`, token);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    dir,
    dataDir,
    workspace,
    startMs,
    child,
    rssMB: () => rssOf(child.pid!),
    anonMB: () => anonOf(child.pid!),
    tail,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(t);
      }
      if (process.env.BENCH_KEEP_DIR) process.stderr.write(`kept ${dir}\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The model section pointing at a fake OpenAI server (no retries: the fake never fails here). */
export function fakeModels(baseUrl: string): Record<string, unknown> {
  return {
    providers: { fake: { base_url: baseUrl, api_key: "sk-fake" } },
    primary: "fake/bench-model",
    max_retries: 0,
    timeout_s: 30,
  };
}
