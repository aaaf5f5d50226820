/**
 * Test harness for the gateway: a real daemon (`Daemon.start`, in-process) with a config file in a
 * temp dir, the gateway on a free 127.0.0.1 port and the fake OpenAI server as the model provider.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { Daemon } from "../../internal/daemon/daemon.js";
import type { Clock } from "../../internal/core/clock.js";
import { readTokenFile, tokenFilePath } from "../../internal/gateway/token-store.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";

export interface GatewayHarness {
  daemon: Daemon;
  fake: FakeOpenAI;
  port: number;
  /** http://127.0.0.1:<port> */
  base: string;
  /** ws://127.0.0.1:<port>/ws */
  wsUrl: string;
  dir: string;
  configPath: string;
  /** The gateway token (the generated `<data_dir>/gateway-token`, or `gateway.token` when set). */
  token: string;
  /** `authorization: Bearer <token>` plus a JSON content type, merged with `extra`. */
  headers(extra?: Record<string, string>): Record<string, string>;
  /** The daemon's JSON log lines so far. */
  logs(): string[];
  /** Stops the daemon and starts a new one on the same port, config and data (a daemon restart). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A port that was free a moment ago (the config schema needs a concrete port, not 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface HarnessOptions {
  gateway?: Record<string, unknown>;
  config?: Record<string, unknown>;
  fake?: FakeOpenAI;
  /** The daemon's clock (a FakeClock drives timers such as the websocket `tick`). */
  clock?: Clock;
}

/** The config object the harness writes (JSON is valid YAML). */
export function harnessConfig(
  dir: string,
  port: number,
  fakeUrl: string,
  opts: HarnessOptions = {},
): Record<string, unknown> {
  return {
    data_dir: join(dir, "data"),
    workspace: join(dir, "workspace"),
    timezone: "UTC",
    log: { level: "info", pretty: false },
    models: {
      providers: { fake: { base_url: fakeUrl, api_key: "sk-fake" } },
      primary: "fake/test-model",
      max_retries: 0,
      timeout_s: 10,
    },
    gateway: { bind: "127.0.0.1", port, ...(opts.gateway ?? {}) },
    ...(opts.config ?? {}),
  };
}

export async function startGatewayDaemon(opts: HarnessOptions = {}): Promise<GatewayHarness> {
  const fake = opts.fake ?? (await startFakeOpenAI());
  const dir = mkdtempSync(join(tmpdir(), "familiar-gw-"));
  mkdirSync(join(dir, "workspace"), { recursive: true });
  const port = await freePort();
  const configPath = join(dir, "config.yaml");
  writeFileSync(configPath, JSON.stringify(harnessConfig(dir, port, fake.baseUrl, opts), null, 2));
  const sink = new PassThrough();
  const logLines: string[] = [];
  let partial = "";
  sink.on("data", (chunk: Buffer) => {
    const parts = (partial + chunk.toString("utf8")).split("\n");
    partial = parts.pop() ?? "";
    logLines.push(...parts.filter(Boolean));
  });
  let daemon: Daemon;
  try {
    daemon = await Daemon.start({
      configPath,
      watchConfig: false,
      logDestination: sink,
      env: {},
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  } catch (err) {
    if (!opts.fake) await fake.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const explicit = (opts.gateway as { token?: unknown } | undefined)?.token;
  const token =
    typeof explicit === "string" ? explicit : (readTokenFile(tokenFilePath(join(dir, "data"))) ?? "");
  const harness: GatewayHarness = {
    daemon,
    fake,
    token,
    logs: () => [...logLines],
    headers: (extra = {}) => ({
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      ...extra,
    }),
    port,
    base: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    dir,
    configPath,
    async restart() {
      await daemon.stop("restart");
      daemon = await Daemon.start({
        configPath,
        watchConfig: false,
        logDestination: sink,
        env: {},
        ...(opts.clock ? { clock: opts.clock } : {}),
      });
      harness.daemon = daemon;
    },
    async close() {
      await daemon.stop("test");
      if (!opts.fake) await fake.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return harness;
}

/** Polls `fn` until it returns a truthy value (generous timeout for loaded CI machines). */
export async function waitFor<T>(
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
