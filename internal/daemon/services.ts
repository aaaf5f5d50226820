/**
 * Builds the daemon's services in start order. Each optional part is imported lazily so a config that
 * does not use it pays nothing for it.
 *
 * Order: models -> tools -> agent host -> gateway routes -> channels -> scheduler (heartbeat, cron).
 * Each section below is owned by one module; keep edits inside your section.
 */
import type { ConfigManager } from "../config/manager.js";
import type { CoreContext, Service } from "../core/context.js";
import type { AgentHost } from "../core/host.js";
import type { HttpServer } from "../gateway/http-server.js";
import type { ChannelRegistry } from "../channels/registry.js";

/** Handles to the main parts, for tests, the gateway and the CLI. Filled in as services are built. */
export interface DaemonParts {
  host?: AgentHost;
  channels: ChannelRegistry;
  config: ConfigManager;
  http: HttpServer;
  /** Free-form registry for parts other modules look up (router, tools, scheduler...). */
  extra: Record<string, unknown>;
}

export async function buildServices(
  ctx: CoreContext,
  http: HttpServer,
  channels: ChannelRegistry,
  config: ConfigManager,
): Promise<{ parts: DaemonParts; services: Service[] }> {
  const parts: DaemonParts = { channels, config, http, extra: {} };
  const services: Service[] = [];
  void ctx;

  // --- models (internal/models) ---

  // --- tools, skills, mcp (internal/tools, internal/skills) ---

  // --- agent host (internal/agent) ---

  // --- gateway (internal/gateway) ---
  if (ctx.config().gateway.enabled) {
    const { createGatewayService } = await import("../gateway/service.js");
    services.push(createGatewayService(ctx, { http, host: parts.host, channels, config, parts }));
  }

  // --- channels: telegram (internal/channels/telegram) ---

  // --- channels: discord (internal/channels/discord) ---

  // --- heartbeat and cron (internal/heartbeat, internal/cron) ---

  return { parts, services };
}
