/**
 * The running daemon's address card: `<data_dir>/gateway.json` (mode 0600), written once the gateway
 * listens and removed at a clean stop. CLI commands read it first, so they reach the daemon that is
 * actually running even after config.yaml was edited (a new port waits for a restart) or while the
 * file holds an invalid edit. It never contains a token: it says where the token is (the generated
 * token file) or that the token comes from the config.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parseDocument } from "yaml";
import { loadConfigFile } from "../config/load.js";

export const RUNTIME_FILE = "gateway.json";

/** What a running daemon leaves in its data dir. */
export interface GatewayRuntimeInfo {
  pid: number;
  /** Base URL of the live listener, e.g. `http://127.0.0.1:18790`. */
  url: string;
  bind: string;
  port: number;
  /** Where the token lives: the generated file, or `config` (gateway.token of the config file). */
  token: { source: "file"; file: string } | { source: "config" };
  configFile: string;
  startedAt: number;
}

export function runtimeFilePath(dataDir: string): string {
  return join(dataDir, RUNTIME_FILE);
}

/** Writes the card atomically (temp file + rename), mode 0600. */
export function writeRuntimeFile(dataDir: string, info: GatewayRuntimeInfo): void {
  const file = runtimeFilePath(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(info, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
}

/** Removes the card when it is ours (a second daemon refused by the lock must not delete it). */
export function removeRuntimeFile(dataDir: string, pid = process.pid): void {
  const info = readRuntimeFile(dataDir);
  if (info && info.pid !== pid) return;
  rmSync(runtimeFilePath(dataDir), { force: true });
}

/** Reads the card, or undefined when absent or malformed. Does not check that the pid lives. */
export function readRuntimeFile(dataDir: string): GatewayRuntimeInfo | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(runtimeFilePath(dataDir), "utf8"));
  } catch {
    return undefined;
  }
  const o = raw as Partial<GatewayRuntimeInfo>;
  if (typeof o.pid !== "number" || typeof o.url !== "string" || typeof o.port !== "number") return undefined;
  if (!o.token || (o.token.source !== "config" && o.token.source !== "file")) return undefined;
  return o as GatewayRuntimeInfo;
}

/** True while a process with this pid exists (a card left by a kill -9 is stale). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The data dir a config file points at, even when the file currently fails validation (the CLI must
 * still find the running daemon then): the validated value when it loads, else the raw `data_dir`
 * string of the YAML, else the schema default `./data`, relative to the config file's directory.
 */
export function dataDirOf(configFile: string, env: NodeJS.ProcessEnv = process.env): string {
  try {
    return loadConfigFile(configFile, env, { deferSecrets: true }).config.data_dir;
  } catch {
    /* fall back to a lenient read below */
  }
  const base = dirname(resolve(configFile));
  let raw: unknown;
  try {
    raw = parseDocument(readFileSync(configFile, "utf8")).toJS();
  } catch {
    raw = undefined;
  }
  const d = (raw as { data_dir?: unknown } | undefined)?.data_dir;
  const dir = typeof d === "string" && d && !d.includes("${") ? d : "./data";
  return isAbsolute(dir) ? dir : resolve(base, dir);
}
