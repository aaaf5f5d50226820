/**
 * Builds the daemon's services in start order. Each optional part is imported lazily so a config that
 * does not use it pays nothing for it.
 */
import type { ConfigManager } from "../config/manager.js";
import type { CoreContext, Service } from "../core/context.js";
import type { AgentHost } from "../core/host.js";
import type { HttpServer } from "../gateway/http-server.js";
import type { ChannelRegistry } from "../channels/registry.js";

/** Handles to the main parts, for tests and the CLI. */
export interface DaemonParts {
  host?: AgentHost;
}

export async function buildServices(
  _ctx: CoreContext,
  _http: HttpServer,
  _channels: ChannelRegistry,
  _config: ConfigManager,
): Promise<{ parts: DaemonParts; services: Service[] }> {
  const parts: DaemonParts = {};
  const services: Service[] = [];
  return { parts, services };
}
