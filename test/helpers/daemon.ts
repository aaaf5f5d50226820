/**
 * Test helper: runs the real `familiar run` as a child process on a temp data dir and a free port, and
 * waits for `GET /healthz` to answer 200. Uses the TypeScript sources through tsx, so a test always
 * exercises the code in the tree; set FAMILIAR_TEST_DIST=1 to run the built bundle (`dist/bundle/`) instead.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse } from "yaml";
import { readTokenFile, tokenFilePath } from "../../internal/gateway/token-store.js";

/** Repository root (where package.json and cmd/ live). */
export const REPO_ROOT = resolve(import.meta.dirname, "../..");

export interface StartDaemonOptions {
  /**
   * The config: an object (merged over the helper's defaults: temp data_dir/workspace, free port,
   * UTC, log level info) or a YAML string written as is (placeholders `{{DATA_DIR}}`,
   * `{{WORKSPACE}}` and `{{PORT}}` are filled in).
   */
  config?: Record<string, unknown> | string;
  /** Extra environment for the child (merged over a minimal copy of ours). */
  env?: Record<string, string>;
  /** Reuse this directory (e.g. a second daemon on the same data dir); a new temp dir otherwise. */
  dir?: string;
  /** Port to use; a free one otherwise. */
  port?: number;
  /** Do not wait for /healthz (for start failures); default false. */
  noWait?: boolean;
  /** The CLI to run instead of {@link cliCommand} (`run --config FILE` is appended). */
  command?: string[];
  /** How long to wait for /healthz; default 30 s (a loaded 2-core CI machine is slow to start tsx). */
  timeoutMs?: number;
}

export interface DaemonProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The temp dir holding config.yaml, data/ and workspace/. */
  dir: string;
  dataDir: string;
  workspace: string;
  configPath: string;
  child: ChildProcess;
  /** The gateway token (the generated `<data_dir>/gateway-token`, or gateway.token when set). */
  token(): string;
  /** `authorization: Bearer <token>` plus a JSON content type, merged with `extra`. */
  headers(extra?: Record<string, string>): Record<string, string>;
  /** Lines printed on stdout so far (JSON log lines). */
  stdoutLines(): string[];
  /** Lines printed on stderr so far. */
  stderrLines(): string[];
  /** Sends a signal (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<ExitInfo>;
  /** SIGKILL, as a crash or power cut would; waits for the exit. */
  kill9(): Promise<ExitInfo>;
  /** Resolves when the child has exited. */
  waitExit(timeoutMs?: number): Promise<ExitInfo>;
  /** Stops the child if still running and removes the temp dir (unless it was passed in). */
  cleanup(): Promise<void>;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const running = new Set<DaemonProcess>();

/** A port that was free a moment ago (the config needs a concrete port, not 0). */
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

/** The command that runs the CLI: tsx over the sources, or dist when FAMILIAR_TEST_DIST=1. */
export function cliCommand(): string[] {
  const dist = join(REPO_ROOT, "dist/bundle/familiar.js");
  if (process.env.FAMILIAR_TEST_DIST === "1" && existsSync(dist)) return [process.execPath, dist];
  // `--import tsx` would resolve from the child's cwd (a temp dir); point at the package's loader instead.
  const tsx = pathToFileURL(createRequire(join(REPO_ROOT, "package.json")).resolve("tsx")).href;
  return [process.execPath, "--import", tsx, join(REPO_ROOT, "cmd/familiar.ts")];
}

/**
 * A state dir of this test file's own: daemons started by a test register there (the CLI's daemon
 * registry), never in the developer's ~/.local/state, and CLIs of other test files never see them.
 */
let stateDir: string | undefined;
function testStateDir(): string {
  stateDir ??= mkdtempSync(join(tmpdir(), "familiar-state-"));
  return stateDir;
}

/** Environment for children: PATH/HOME only, so the developer's own FAMILIAR_* or API keys never leak in. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const k of ["PATH", "HOME", "TMPDIR", "LANG", "SYSTEMROOT"])
    if (process.env[k]) base[k] = process.env[k];
  return { ...base, NO_COLOR: "1", XDG_STATE_HOME: testStateDir(), ...extra };
}

/** What a CLI run printed and how it exited. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI once in `cwd` with {@link childEnv} plus `env`, and collects its output. */
export function runCli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliRun> {
  const [cmd, ...pre] = cliCommand();
  const child = spawn(cmd!, [...pre, ...args], { cwd, env: childEnv(env), stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  return new Promise((res) => child.on("close", (code) => res({ code, stdout, stderr })));
}

/** Starts `familiar run` in a child process; resolves once /healthz answers 200 (unless `noWait`). */
export async function startDaemonProcess(opts: StartDaemonOptions = {}): Promise<DaemonProcess> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "familiar-daemon-"));
  const dataDir = join(dir, "data");
  const workspace = join(dir, "workspace");
  mkdirSync(workspace, { recursive: true });
  const port = opts.port ?? (await freePort());
  const configPath = join(dir, "config.yaml");
  let text: string;
  if (typeof opts.config === "string") {
    text = opts.config
      .replaceAll("{{DATA_DIR}}", dataDir)
      .replaceAll("{{WORKSPACE}}", workspace)
      .replaceAll("{{PORT}}", String(port));
  } else {
    const cfg = opts.config ?? {};
    const gateway = (cfg.gateway ?? {}) as Record<string, unknown>;
    // JSON is valid YAML.
    text = JSON.stringify(
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
    );
  }
  writeFileSync(configPath, text);

  const [cmd, ...args] = opts.command ?? cliCommand();
  const child = spawn(cmd!, [...args, "run", "--config", configPath], {
    cwd: dir,
    env: childEnv(opts.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out: string[] = [];
  const err: string[] = [];
  lineReader(child.stdout, out);
  lineReader(child.stderr, err);
  const exited = new Promise<ExitInfo>((res) => child.once("exit", (code, signal) => res({ code, signal })));
  const isRunning = (): boolean => child.exitCode === null && child.signalCode === null;

  const waitExit = async (timeoutMs = 30_000): Promise<ExitInfo> => {
    let t: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        exited,
        new Promise<never>((_, rej) => {
          t = setTimeout(
            () => rej(new Error(`daemon did not exit within ${timeoutMs} ms\n${tail(out, err)}`)),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(t);
    }
  };

  // Read when asked: the daemon creates the file at its first start.
  const token = (): string => {
    const gw = (parse(text) as { gateway?: { token?: unknown } } | null)?.gateway;
    const explicit = typeof gw?.token === "string" && !gw.token.includes("${") ? gw.token : undefined;
    return explicit ?? readTokenFile(tokenFilePath(dataDir)) ?? "";
  };
  const proc: DaemonProcess = {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    dataDir,
    workspace,
    configPath,
    child,
    token,
    headers: (extra = {}) => ({
      authorization: `Bearer ${token()}`,
      "content-type": "application/json",
      ...extra,
    }),
    stdoutLines: () => [...out],
    stderrLines: () => [...err],
    async stop(signal = "SIGTERM") {
      if (isRunning()) child.kill(signal);
      return waitExit();
    },
    async kill9() {
      if (isRunning()) child.kill("SIGKILL");
      return waitExit();
    },
    waitExit,
    async cleanup() {
      running.delete(proc);
      if (isRunning()) {
        child.kill("SIGTERM");
        await waitExit(15_000).catch(async () => {
          child.kill("SIGKILL");
          await exited;
        });
      }
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  running.add(proc);
  if (opts.noWait) return proc;

  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (!isRunning()) {
      await proc.cleanup();
      const info = await exited;
      throw new Error(
        `daemon exited during start (code ${info.code}, signal ${info.signal})\n${tail(out, err)}`,
      );
    }
    if (await healthy(proc.url)) return proc;
    await new Promise((r) => setTimeout(r, 50));
  }
  await proc.cleanup();
  throw new Error(`daemon did not answer /healthz within ${opts.timeoutMs ?? 30_000} ms\n${tail(out, err)}`);
}

/** Stops and removes every daemon this helper started that a test did not clean up (use in afterAll). */
export async function cleanupDaemons(): Promise<void> {
  await Promise.all([...running].map((p) => p.cleanup()));
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

function lineReader(stream: NodeJS.ReadableStream | null, into: string[]): void {
  if (!stream) return;
  let buf = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      into.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  stream.on("end", () => {
    if (buf) into.push(buf);
    buf = "";
  });
}

function tail(out: string[], err: string[]): string {
  return `--- stdout (last 20) ---\n${out.slice(-20).join("\n")}\n--- stderr ---\n${err.slice(-20).join("\n")}`;
}
