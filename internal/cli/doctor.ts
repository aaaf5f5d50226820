/**
 * `familiar doctor [--config PATH]`: checks what a daemon needs, one line per check:
 * Node version, config validity, data dir writable, workspace, the exec sandbox (bubblewrap works, or
 * what to install), gateway address, each model provider (reachable, credentials accepted), and
 * channel tokens. Exits 1 when any check fails.
 *
 * Provider checks separate "the server answered and refused" (HTTP 401/403: fix the key) from
 * "unreachable" (refused connection, unknown host, timeout: fix the URL or the network).
 *
 * Over 300 lines on purpose: one check per section of the config, run in order; splitting would
 * scatter the report.
 */
import { accessSync, constants, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { tokenFilePath } from "../gateway/token-store.js";
import { describePortOwner } from "../daemon/port-owner.js";
import { networkFix, safeUrl } from "../models/provider-hint.js";
import { createServer } from "node:net";
import { join } from "node:path";
import { loadConfigFile, type UnresolvedEnv } from "../config/load.js";
import { configRefusal } from "./config-path.js";
import { ConfigError, formatProblem } from "../config/errors.js";
import type { Config } from "../config/schema.js";
import { isLoopback, startProblems, summarize } from "./config-check.js";
import { unpricedWarning } from "../budgets/unpriced.js";

export type CheckStatus = "ok" | "warn" | "fail";

export interface CheckResult {
  status: CheckStatus;
  name: string;
  detail: string;
}

/** Minimum Node version (package.json engines). */
export const MIN_NODE = "22.22.0";
/** Per-provider request timeout. */
export const PROVIDER_TIMEOUT_MS = 5000;

/** True when `version` (e.g. `20.20.2` or `v22.1.0`) is at least `min`. */
export function versionAtLeast(version: string, min: string): boolean {
  const a = version.replace(/^v/, "").split(".").map(Number);
  const b = min.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

/** Runs every check; `env` (variable substitution) and `nodeVersion` default to the real ones. */
export async function runDoctor(
  configPath: string,
  opts: { env?: NodeJS.ProcessEnv; nodeVersion?: string; timeoutMs?: number } = {},
): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const node = opts.nodeVersion ?? process.versions.node;
  out.push(
    versionAtLeast(node, MIN_NODE)
      ? { status: "ok", name: "node", detail: `${node} (>= ${MIN_NODE.replace(/\.0$/, "")})` }
      : { status: "fail", name: "node", detail: `${node} is too old: Familiar needs Node >= ${MIN_NODE}` },
  );

  // Never a key to an address found in a file the model or another user could have written.
  const refused = configRefusal(configPath, opts.env ?? process.env);
  if (refused) {
    out.push({ status: "fail", name: "config", detail: refused });
    return out;
  }
  let cfg: Config;
  let unresolved: UnresolvedEnv[];
  try {
    // Secrets deferred: an unset ${VAR} skips what uses it (cli/doctor-unset.ts), not everything.
    ({ config: cfg, unresolvedEnv: unresolved } = loadConfigFile(configPath, opts.env ?? process.env, {
      deferSecrets: true,
    }));
  } catch (err) {
    const problems =
      err instanceof ConfigError ? err.problems : [{ path: "", message: (err as Error).message }];
    const shown = problems.slice(0, 3).map(formatProblem).join("; ");
    const more = problems.length > 3 ? `; and ${problems.length - 3} more` : "";
    out.push({
      status: "fail",
      name: "config",
      detail: `${configPath}: ${shown}${more} (familiar config check lists them all)`,
    });
    return out;
  }
  const startIssues = startProblems(cfg);
  out.push(
    startIssues.length === 0
      ? { status: "ok", name: "config", detail: `${configPath} (${summarize(cfg)})` }
      : { status: "fail", name: "config", detail: startIssues.map(formatProblem).join("; ") },
  );

  // Every agent's models (config.yaml, workspace files, API) against the 16K/32K window rules.
  const { checkContextWindows } = await import("./agent-window-findings.js");
  const windows = checkContextWindows(cfg);
  if (windows) out.push(windows);
  out.push(checkDataDir(cfg.data_dir));
  out.push(checkWorkspace(cfg.workspace));
  // Whether exec commands run in bubblewrap, and what to install when they cannot (issue 18).
  const { checkSandbox } = await import("../tools/sandbox/sandbox-mode.js");
  out.push({ name: "sandbox", ...(await checkSandbox(cfg)) });
  if (cfg.gateway.enabled) out.push(await checkGateway(cfg));
  const { withoutUnset } = await import("./doctor-unset.js");
  const probed = withoutUnset(cfg, unresolved);
  out.push(...probed.skipped);
  // All providers skipped is not "no provider configured": their lines above say why.
  if (Object.keys(probed.cfg.models.providers).length || !Object.keys(cfg.models.providers).length)
    out.push(...(await checkProviders(probed.cfg, opts.timeoutMs ?? PROVIDER_TIMEOUT_MS)));
  // An unpriced model is not free: budgets count it at budgets.default_price.
  const unpriced = unpricedWarning(cfg);
  if (unpriced) out.push({ status: "warn", name: "pricing", detail: unpriced });
  const { checkMemory } = await import("../memory/memory-doctor.js");
  out.push(await checkMemory(cfg, opts.timeoutMs ?? PROVIDER_TIMEOUT_MS));
  out.push(...checkChannels(probed.cfg));
  // Reminders whose reply reached nobody: where they are kept (issue 47).
  const { checkUndeliveredReminders } = await import("./doctor-reminders.js");
  const reminders = await checkUndeliveredReminders(cfg);
  if (reminders) out.push(reminders);
  const { checkSecurity } = await import("./doctor-security.js");
  out.push(...checkSecurity(cfg, configPath));
  return out;
}

function checkDataDir(dir: string): CheckResult {
  const probe = join(dir, `.doctor-${process.pid}`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(probe, "ok");
    unlinkSync(probe);
  } catch (err) {
    return { status: "fail", name: "data_dir", detail: `${dir} is not writable: ${(err as Error).message}` };
  }
  const pid = lockPid(dir);
  return {
    status: "ok",
    name: "data_dir",
    detail: `${dir} is writable${pid ? ` (a daemon is running on it, pid ${pid})` : ""}`,
  };
}

/** The pid in `<data_dir>/familiar.lock` when that process is alive. */
function lockPid(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, "familiar.lock"), "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM" ? -1 : undefined;
  }
}

function checkWorkspace(dir: string): CheckResult {
  try {
    if (!statSync(dir).isDirectory())
      return { status: "fail", name: "workspace", detail: `${dir} is not a directory` };
    accessSync(dir, constants.R_OK | constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT")
      return {
        status: "warn",
        name: "workspace",
        detail: `${dir} does not exist: the agent runs without its prompt files (create it with familiar init)`,
      };
    return { status: "fail", name: "workspace", detail: `${dir} is not usable: ${(err as Error).message}` };
  }
  const present = ["AGENTS.md", "SOUL.md", "HEARTBEAT.md"].filter((f) => {
    try {
      return statSync(join(dir, f)).isFile();
    } catch {
      return false;
    }
  });
  return present.length > 0
    ? { status: "ok", name: "workspace", detail: `${dir} (${present.join(", ")})` }
    : { status: "warn", name: "workspace", detail: `${dir} has no AGENTS.md, SOUL.md or HEARTBEAT.md` };
}

async function checkGateway(cfg: Config): Promise<CheckResult> {
  const { bind, port, token } = cfg.gateway;
  const where = `${bind}:${port}`;
  const auth = token ? " (token set)" : ` (token: ${tokenFilePath(cfg.data_dir)}, generated)`;
  const free = await new Promise<NodeJS.ErrnoException | undefined>((res) => {
    const s = createServer();
    s.once("error", (err: NodeJS.ErrnoException) => res(err));
    s.listen(port, bind, () => s.close(() => res(undefined)));
  });
  if (!free)
    return {
      status: "ok",
      name: "gateway",
      detail: `${where} is free${auth}${isLoopback(bind) ? "" : "; reachable from other machines"}`,
    };
  if (free.code === "EADDRINUSE")
    return lockPid(cfg.data_dir)
      ? { status: "ok", name: "gateway", detail: `${where} is in use by the running daemon` }
      : {
          status: "fail",
          name: "gateway",
          detail: `${where} is in use by ${describePortOwner(port)} (choose another: familiar run --port N, FAMILIAR_PORT or gateway.port)`,
        };
  return { status: "fail", name: "gateway", detail: `cannot listen on ${where}: ${free.message}` };
}

async function checkProviders(cfg: Config, timeoutMs: number): Promise<CheckResult[]> {
  const entries = Object.entries(cfg.models.providers);
  if (entries.length === 0)
    return [
      {
        status: "warn",
        name: "models",
        detail: "no provider configured: the offline echo model answers (add one under models.providers)",
      },
    ];
  return Promise.all(entries.map(([id, p]) => checkProvider(cfg, id, p, timeoutMs)));
}

type Provider = Config["models"]["providers"][string];

/** GET <base_url>/models with the key: the cheapest request that proves reachability and credentials. */
export async function checkProvider(
  cfg: Config,
  id: string,
  p: Provider,
  timeoutMs = PROVIDER_TIMEOUT_MS,
): Promise<CheckResult> {
  const name = `provider ${id}`;
  const url = `${p.base_url.replace(/\/+$/, "")}/models`;
  const headers: Record<string, string> = { accept: "application/json", ...p.headers };
  if (p.api_key) headers.authorization = `Bearer ${p.api_key}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    return { status: "fail", name, detail: `unreachable: ${networkReason(err, id, p, url, timeoutMs)}` };
  }
  const body = await res.text().catch(() => "");
  if (res.status === 401 || res.status === 403)
    return {
      status: "fail",
      name,
      detail: `credentials refused by ${safeUrl(url) ?? url} (HTTP ${res.status}${apiMessage(body)}): ${p.api_key ? `check models.providers.${id}.api_key` : `no api_key is set (models.providers.${id}.api_key)`}`,
    };
  if (res.status === 404)
    return {
      status: "warn",
      name,
      detail: `reachable, but ${url} is not supported (HTTP 404): credentials not verified`,
    };
  if (!res.ok)
    return { status: "fail", name, detail: `${url} answered HTTP ${res.status}${apiMessage(body)}` };
  let ids: string[] = [];
  try {
    const data = (JSON.parse(body) as { data?: { id?: unknown }[] }).data ?? [];
    ids = data.map((m) => String(m.id));
  } catch {
    return { status: "warn", name, detail: `reachable, but ${url} did not return JSON: is base_url right?` };
  }
  // Models the config uses from this provider that the listing does not show (listings can be partial).
  const used = [cfg.models.primary, ...cfg.models.fallbacks]
    .filter((r): r is string => r?.startsWith(`${id}/`) === true)
    .map((r) => r.slice(id.length + 1));
  const unlisted = ids.length > 0 ? used.filter((m) => !ids.includes(m)) : [];
  if (unlisted.length > 0)
    return {
      status: "warn",
      name,
      detail: `reachable, key accepted, but ${unlisted.join(", ")} not in its ${ids.length} listed models`,
    };
  return { status: "ok", name, detail: `reachable, key accepted (${ids.length} models)` };
}

/** `<url> (no answer in 5 s): check ...` or `<url>: connection refused by host: is the server running? ...` */
function networkReason(err: unknown, id: string, p: Provider, url: string, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const shown = safeUrl(url) ?? url;
  if (e.name === "TimeoutError" || e.name === "AbortError")
    return `no answer from ${shown} within ${timeoutMs / 1000} s: check models.providers.${id}.base_url and the network`;
  const codes = e.cause?.code ? [e.cause.code] : [];
  return `${shown}: ${networkFix(id, p.base_url, codes, e.cause?.message ?? e.message)}`;
}

function apiMessage(body: string): string {
  try {
    const msg = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    if (typeof msg === "string" && msg) return `: ${msg.length > 120 ? `${msg.slice(0, 117)}...` : msg}`;
  } catch {
    /* not JSON */
  }
  return "";
}

function checkChannels(cfg: Config): CheckResult[] {
  const out: CheckResult[] = [];
  for (const [name, ch] of Object.entries(cfg.channels) as [string, { enabled: boolean; token?: string }][]) {
    if (!ch.enabled) continue;
    out.push(
      ch.token
        ? { status: "ok", name: `channel ${name}`, detail: "enabled, token set" }
        : {
            status: "fail",
            name: `channel ${name}`,
            detail: `enabled but channels.${name}.token is not set`,
          },
    );
  }
  if (out.length === 0) out.push({ status: "ok", name: "channels", detail: "none enabled (gateway only)" });
  return out;
}

/** `ok    node: 20.20.2 (>= 20.19)` */
export function formatCheck(c: CheckResult): string {
  return `${c.status.padEnd(5)} ${c.name}: ${c.detail}`;
}

/** CLI entry: prints one line per check; exit code 1 when any check failed. */
export async function doctorCommand(opts: { config: string; live?: boolean }): Promise<void> {
  const results = await runDoctor(opts.config);
  if (opts.live) results.push(...(await liveChannelChecks(opts.config)));
  for (const r of results) process.stdout.write(`${formatCheck(r)}\n`);
  const fails = results.filter((r) => r.status === "fail").length;
  const warns = results.filter((r) => r.status === "warn").length;
  process.stdout.write(
    fails > 0
      ? `${fails} check${fails === 1 ? "" : "s"} failed\n`
      : `all checks passed${warns ? ` (${warns} warning${warns === 1 ? "" : "s"})` : ""}\n`,
  );
  if (fails > 0) process.exitCode = 1;
}

/**
 * `doctor --live`: asks the running daemon to probe each channel (`channels.probe`) and turns each
 * answer into a check with the round trip and when the channel last heard from its platform.
 */
export async function liveChannelChecks(config: string): Promise<CheckResult[]> {
  const { connectAsOwner } = await import("./owner-client.js");
  let client;
  try {
    client = await connectAsOwner({ config }, "doctor");
  } catch (err) {
    return [
      {
        name: "live channels",
        status: "fail",
        detail: `could not reach the running daemon: ${(err as Error).message}`,
      },
    ];
  }
  try {
    const r = await client.request<{
      channels: {
        channel: string;
        state: string;
        ok: boolean;
        rttMs: number;
        detail: string;
        lastHeardAt: number | null;
      }[];
    }>("channels.probe", {});
    if (r.channels.length === 0)
      return [{ name: "live channels", status: "warn", detail: "no channel is running" }];
    return r.channels.map((c) => ({
      name: `live ${c.channel}`,
      status: c.ok ? "ok" : "fail",
      detail: `${c.state}, round trip ${c.rttMs} ms: ${c.detail}${c.lastHeardAt ? `; last heard ${Math.round((Date.now() - c.lastHeardAt) / 1000)} s ago` : ""}`,
    }));
  } catch (err) {
    return [
      { name: "live channels", status: "fail", detail: `channels.probe failed: ${(err as Error).message}` },
    ];
  } finally {
    await client.close().catch(() => undefined);
  }
}
