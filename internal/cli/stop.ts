/**
 * `familiar stop` and `familiar restart` (issue 47: `restore` said "stop it first" and there was no
 * way to). The daemon is the process whose pid `<data_dir>/familiar.lock` holds (it exists even with
 * the gateway off).
 *
 * Invariants:
 * - a signal goes only to a pid that is ours for sure: the lock's pid must also be named by the
 *   daemon's card or the owner's registry for the same data dir, or its command line must be
 *   `familiar`'s; a stale lock whose pid now belongs to another program is never signalled;
 * - `stop` sends SIGTERM (the daemon drains, as on Ctrl-C) and returns once the process is gone, or
 *   says it is still draining after the wait; it never sends SIGKILL;
 * - `restart` of a daemon under systemd is left to systemd (it would start its own again): the
 *   command says which `systemctl` line to run. Otherwise it stops the daemon and starts
 *   `familiar run --config FILE` detached, its output appended to `<data_dir>/familiar.log` (0600),
 *   which `familiar logs` prints when the daemon is not running.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadConfigFile } from "../config/load.js";
import { dataDirOf, processAlive, readRuntimeFile } from "../gateway/runtime-file.js";
import { readRegistry } from "../gateway/daemon-registry.js";

/** How long `stop` waits for the drain before saying so (the daemon's own drain limit is shorter). */
const STOP_WAIT_MS = 30_000;

/** The file a daemon started by `restart` writes its output to. */
export function daemonLogFile(dataDir: string): string {
  return join(dataDir, "familiar.log");
}

function lockPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "familiar.lock"), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 && processAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function cmdlineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return undefined;
  }
}

/** True when `pid` is vouched for as this data dir's daemon (see the invariants). */
function isOurDaemon(pid: number, dataDir: string): boolean {
  if (readRuntimeFile(dataDir)?.pid === pid) return true;
  if (readRegistry().some((e) => e.pid === pid && resolve(e.dataDir) === resolve(dataDir))) return true;
  return /familiar/.test(cmdlineOf(pid) ?? "");
}

function underSystemd(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .some((v) => v.startsWith("INVOCATION_ID="));
  } catch {
    return false;
  }
}

/** The running daemon of `configFile`'s data dir, or a one-line reason there is none. */
export function findDaemon(configFile: string): { pid: number; dataDir: string } | { none: string } {
  const dataDir = dataDirOf(configFile);
  const pid = lockPid(dataDir);
  if (pid === undefined)
    return { none: `no daemon is running on ${dataDir} (config ${resolve(configFile)})` };
  if (!isOurDaemon(pid, dataDir))
    return {
      none: `${join(dataDir, "familiar.lock")} names pid ${pid}, which is not a familiar daemon (a stale lock); nothing was signalled`,
    };
  return { pid, dataDir };
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!processAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !processAlive(pid);
}

/** `familiar stop`: exit code 0 when the daemon is gone (or was not running), 1 otherwise. */
export async function stopCommand(
  opts: { config: string },
  log = (s: string) => process.stdout.write(s),
): Promise<number> {
  const found = findDaemon(opts.config);
  if ("none" in found) {
    log(`familiar stop: ${found.none}\n`);
    return found.none.startsWith("no daemon") ? 0 : 1;
  }
  process.kill(found.pid, "SIGTERM");
  if (await waitGone(found.pid, STOP_WAIT_MS)) {
    log(`stopped the daemon (pid ${found.pid}) on ${found.dataDir}\n`);
    return 0;
  }
  process.stderr.write(
    `familiar stop: pid ${found.pid} is still draining after ${STOP_WAIT_MS / 1000} s; run familiar stop again, or kill ${found.pid}\n`,
  );
  return 1;
}

/** `familiar restart`: stop, then start detached (see the invariants). */
export async function restartCommand(opts: { config: string }): Promise<number> {
  const configFile = resolve(opts.config);
  const found = findDaemon(configFile);
  if (!("none" in found) && underSystemd(found.pid)) {
    process.stderr.write(
      `familiar restart: the daemon (pid ${found.pid}) runs under systemd; run: systemctl --user restart familiar (or systemctl restart familiar)\n`,
    );
    return 1;
  }
  if (!("none" in found)) {
    const code = await stopCommand({ config: configFile });
    if (code !== 0) return code;
  }
  const dataDir = "none" in found ? dataDirOf(configFile) : found.dataDir;
  const logFile = daemonLogFile(dataDir);
  if (!existsSync(dataDir)) {
    const { mkdirSync } = await import("node:fs");
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  }
  const fd = openSync(logFile, "a", 0o600);
  // The same program and Node as this CLI (the launcher, tsx in a checkout, the bundle installed).
  const child = spawn(
    process.execPath,
    [...process.execArgv, process.argv[1]!, "run", "--config", configFile],
    {
      detached: true,
      stdio: ["ignore", fd, fd],
      env: process.env,
    },
  );
  closeSync(fd);
  child.unref();
  const pid = child.pid;
  // Up when the card names the new pid (the gateway listens), or the lock does with the gateway off.
  let gateway = true;
  try {
    gateway = loadConfigFile(configFile, process.env, { deferSecrets: true }).config.gateway.enabled;
  } catch {
    /* an invalid config: the new daemon says why in its log, and never writes a card */
  }
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    const up = gateway ? readRuntimeFile(dataDir)?.pid === pid : lockPid(dataDir) === pid;
    if (pid !== undefined && up) {
      process.stdout.write(
        `started the daemon (pid ${pid}); its log: ${logFile} (familiar logs follows it)\n`,
      );
      return 0;
    }
    if (pid === undefined || !processAlive(pid)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  process.stderr.write(`familiar restart: the daemon did not come up; see ${logFile}\n`);
  return 1;
}
