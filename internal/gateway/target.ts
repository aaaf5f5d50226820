/**
 * Where CLI commands reach the running daemon: `--url`/`--token` win, then FAMILIAR_GATEWAY_URL /
 * FAMILIAR_GATEWAY_TOKEN, then gateway.bind/port/token from the config file.
 */
import { existsSync } from "node:fs";
import { loadConfigFile } from "../config/load.js";
import { gatewayUrl } from "./client.js";

export interface GatewayTarget {
  url: string;
  token: string | undefined;
}

export function resolveGatewayTarget(opts: { config: string; url?: string; token?: string }): GatewayTarget {
  let url = opts.url ?? (process.env.FAMILIAR_GATEWAY_URL || undefined);
  let token = opts.token ?? (process.env.FAMILIAR_GATEWAY_TOKEN || undefined);
  if ((!url || token === undefined) && existsSync(opts.config)) {
    const cfg = loadConfigFile(opts.config).config;
    url ??= gatewayUrl(cfg.gateway.bind, cfg.gateway.port);
    token ??= cfg.gateway.token;
  }
  url ??= gatewayUrl("127.0.0.1", 18790);
  if (!/^wss?:\/\//.test(url)) url = url.replace(/^http/, "ws");
  if (!/\/ws$/.test(url)) url = url.replace(/\/?$/, "/ws");
  return { url, token };
}
