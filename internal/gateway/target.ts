/**
 * Where CLI commands reach the running daemon, and with which token.
 *
 * Address: `--url`, then FAMILIAR_GATEWAY_URL, then the running daemon's card
 * (`<data_dir>/gateway.json`, when its pid is alive), then gateway.bind/port of the config file. The
 * card comes before the config so a port edited in config.yaml (which waits for a restart) or an
 * invalid edit does not cut the CLI off from the daemon that actually runs.
 *
 * Token: `--token`, then FAMILIAR_GATEWAY_TOKEN, then the one the card names (the generated token
 * file, or gateway.token of the config), then gateway.token, then `<data_dir>/gateway-token`. The
 * owner's CLI runs as the owner's user, who can read that 0600 file; nobody else can.
 *
 * Invariant: the token goes only to an address the owner chose (a flag, the environment, a config and
 * card that pass gateway/owner-files.ts). A card in a workspace, or one another user owns or may
 * write, throws {@link UntrustedFileError} before anything is read from it or sent.
 */
import { existsSync } from "node:fs";
import { loadConfigFile } from "../config/load.js";
import type { Config } from "../config/schema.js";
import { gatewayUrl } from "./client.js";
import { assertOwnerFile } from "./owner-files.js";
import { dataDirOf, processAlive, readRuntimeFile, runtimeFilePath } from "./runtime-file.js";
import { readTokenFile, tokenFilePath } from "./token-store.js";

export interface GatewayTarget {
  /** ws://host:port/ws */
  url: string;
  token: string | undefined;
  /** http://host:port (for the HTTP routes and the dashboard link). */
  httpBase: string;
  /** Where the address came from. */
  via: "flag" | "env" | "runtime" | "config" | "default";
}

function tryConfig(file: string, env: NodeJS.ProcessEnv): Config | undefined {
  if (!existsSync(file)) return undefined;
  try {
    // Secrets only where used: the provider keys need not be in the CLI's shell. A gateway.token whose
    // variable is unset is dropped (the generated token file or the daemon's card serve instead).
    const loaded = loadConfigFile(file, env, { deferSecrets: true });
    if (loaded.unresolvedEnv.some((u) => u.path === "gateway.token"))
      return { ...loaded.config, gateway: { ...loaded.config.gateway, token: undefined } };
    return loaded.config;
  } catch {
    return undefined; // an invalid edit: the running daemon's card still leads the way
  }
}

export function resolveGatewayTarget(
  opts: { config: string; url?: string | undefined; token?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): GatewayTarget {
  const envUrl = env.FAMILIAR_GATEWAY_URL || undefined;
  let url = opts.url ?? envUrl;
  let via: GatewayTarget["via"] = opts.url ? "flag" : envUrl ? "env" : "default";
  let token = opts.token ?? (env.FAMILIAR_GATEWAY_TOKEN || undefined);
  const cfg = tryConfig(opts.config, env);
  const dataDir = cfg?.data_dir ?? dataDirOf(opts.config, env);
  assertOwnerFile(
    runtimeFilePath(dataDir),
    "name your own config with --config PATH or FAMILIAR_CONFIG",
    env,
  );
  const card = readRuntimeFile(dataDir);
  const live = card && processAlive(card.pid) ? card : undefined;
  if (!url && live) {
    url = live.url;
    via = "runtime";
  }
  if (!url && cfg) {
    url = gatewayUrl(cfg.gateway.bind, cfg.gateway.port);
    via = "config";
  }
  if (token === undefined && live?.token.source === "file") token = readTokenFile(live.token.file);
  token ??= cfg?.gateway.token || readTokenFile(tokenFilePath(dataDir));
  url ??= gatewayUrl("127.0.0.1", 18790);
  if (!/^wss?:\/\//.test(url)) url = url.replace(/^http/, "ws");
  const base = url.replace(/\/(ws)?\/?$/, "");
  if (!/\/ws$/.test(url)) url = `${base}/ws`;
  return { url, token, httpBase: base.replace(/^ws/, "http"), via };
}
