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
  {
    // The router reads ctx.config() on every call (hot reload); the openai SDK loads on the first call.
    const { createModelRouter } = await import("../models/router.js");
    const { UsageTracker } = await import("../agent/usage/usage-tracker.js");
    const { resolveContextWindow, validateContextWindow } = await import("../models/context-window.js");
    const router = createModelRouter({ config: () => ctx.config(), logger: ctx.logger, clock: ctx.clock });
    parts.extra.router = router;
    parts.extra.usage = new UsageTracker({ db: ctx.db, config: () => ctx.config(), clock: ctx.clock });
    const checkModels = (): void => {
      if (router.usingEcho()) {
        // The router warns once (here at start, or when a reload removes the last provider).
        router.chain();
        return;
      }
      try {
        for (const ref of router.chain())
          validateContextWindow(resolveContextWindow(ctx.config(), ref), {
            logger: ctx.logger,
            modelRef: ref,
          });
      } catch (err) {
        ctx.logger.error({ module: "models" }, (err as Error).message);
      }
    };
    checkModels();
    ctx.onConfig((_next, _prev, changed) => {
      if (changed.some((c) => c === "models" || c.startsWith("models."))) checkModels();
    });
  }

  // --- tools, skills, mcp (internal/tools, internal/skills) ---
  // The registry holds the built-ins; other modules add theirs with parts.extra.tools.register(tool).
  // Pass to the agent host: toolsFor: (agent) => tools.registry.forAgent(agent.id, agent.tools),
  // skillsSection: () => tools.skills.promptSection(), requestApproval: tools.requestApproval.
  {
    const { createToolsService } = await import("../tools/service.js");
    const tools = createToolsService(ctx, {
      channels,
      configFile: config.file,
      usage: parts.extra.usage as import("../agent/usage/usage-tracker.js").UsageTracker,
    });
    parts.extra.tools = tools.registry;
    parts.extra.approvals = tools.approvals;
    parts.extra.skills = tools.skills;
    parts.extra.memory = tools.memory;
    parts.extra.toolsParts = tools;
    services.push(tools.service);
  }

  // --- agent host (internal/agent) ---
  {
    const { createAgentHostService } = await import("../agent/host-service.js");
    const agents = createAgentHostService(ctx, {
      router: parts.extra.router as import("../models/router.js").ModelRouter,
      usage: parts.extra.usage as import("../agent/usage/usage-tracker.js").UsageTracker,
      tools: parts.extra.toolsParts as import("../tools/service.js").ToolsParts,
      channels,
    });
    parts.host = agents.host;
    parts.extra.agents = agents;
    services.push(agents.service);
  }

  // --- gateway (internal/gateway) ---
  if (ctx.config().gateway.enabled) {
    const { createGatewayService } = await import("../gateway/service.js");
    services.push(createGatewayService(ctx, { http, host: parts.host, channels, config, parts }));
  }

  // --- media (internal/media): transcription, speech, documents; send_file ---
  // The openai SDK and unpdf load on the first voice note / PDF, never at start.
  const { createMediaParts } = await import("../media/media-parts.js");
  const media = createMediaParts(
    ctx,
    parts.extra.usage as import("../agent/usage/usage-tracker.js").UsageTracker | undefined,
  );
  parts.extra.media = media;
  {
    const tools = parts.extra.tools as
      { register?: (t: import("../tools/tool.js").Tool) => unknown } | undefined;
    if (typeof tools?.register === "function") {
      const { createSendFileTool } = await import("../tools/send-file-tool.js");
      tools.register(
        createSendFileTool({ config: () => ctx.config(), channels }) as import("../tools/tool.js").Tool,
      );
    }
  }

  // --- channels: telegram, discord (internal/channels/telegram, internal/channels/discord) ---
  // grammy + marked and discord.js load only when their channel is enabled, and only after the daemon
  // is up (DeferredChannel: the import is most of a cold start). A channel connects in the background;
  // a bad token leaves it in state "error" (shown in /healthz) while the daemon keeps running.
  // Built (but not loaded) when off too: a hot reload that sets enabled: true starts it, no restart.
  {
    const loaders = {
      telegram: async (deps: import("../channels/telegram/telegram-channel.js").TelegramDeps) =>
        (await import("../channels/telegram/telegram-channel.js")).createTelegramChannel(ctx, deps),
      discord: async (deps: import("../channels/discord/discord-channel.js").DiscordDeps) =>
        (await import("../channels/discord/discord-channel.js")).createDiscordChannel(ctx, deps),
    };
    const label = { telegram: "Telegram", discord: "Discord" } as const;
    const host = parts.host;
    for (const id of ["telegram", "discord"] as const) {
      if (!host) {
        if (ctx.config().channels[id].enabled)
          ctx.logger.error({ module: id }, `no agent host: the ${label[id]} channel is not running`);
        continue;
      }
      const { DeferredChannel } = await import("../channels/deferred-channel.js");
      const approvals = parts.extra.approvals as
        import("../channels/common/commands.js").ApprovalResolver | undefined;
      const channel = new DeferredChannel(
        id,
        () =>
          loaders[id]({
            host,
            registry: channels,
            // File and API agents, so `/agent <id>` and routing reach them too.
            agentSources: agentSourcesOf(parts),
            media,
            ...(typeof approvals?.resolve === "function" ? { approvals } : {}),
          }),
        ctx.logger,
        afterDaemonReady(ctx),
        {
          enabled: () => ctx.config().channels[id].enabled,
          onConfig: (fn) => ctx.onConfig(fn),
          onEnabled: (ch) => channels.add(ch),
        },
      );
      parts.extra[id] = channel;
      services.push(channel);
    }
  }

  // --- heartbeat and cron (internal/heartbeat, internal/cron) ---
  // Both are built even when off (heartbeat.every 0, cron.enabled false): they follow hot reloads.
  // croner loads only when a cron expression is first parsed.
  if (parts.host) {
    const host = parts.host;
    const { createHeartbeatService } = await import("../heartbeat/heartbeat-service.js");
    const { createCronService } = await import("../cron/cron-service.js");
    const { createCronTool } = await import("../cron/cron-tool.js");
    const heartbeat = createHeartbeatService(ctx, { host, channels });
    const cron = createCronService(ctx, { host, channels });
    parts.extra.heartbeat = heartbeat;
    parts.extra.cron = cron;
    const tools = parts.extra.tools as
      { register?: (t: import("../tools/tool.js").Tool) => unknown } | undefined;
    if (typeof tools?.register === "function")
      tools.register(
        createCronTool(cron, {
          allowedTargets: () => ctx.config().tools.send_message.allowed_targets,
        }) as import("../tools/tool.js").Tool,
      );
    services.push(heartbeat, cron);
  } else {
    ctx.logger.warn({ module: "cron" }, "no agent host: heartbeat and cron are not running");
  }

  return { parts, services };
}

/** Calls `begin` once the daemon is ready (listening), on the next turn of the event loop. */
function afterDaemonReady(ctx: CoreContext): (begin: () => void) => void {
  return (begin) => {
    const off = ctx.bus.on("daemon.ready", () => {
      off();
      setImmediate(begin);
    });
  };
}

/** The host's extra agent sources (workspace files, API agents), as the channels need them. */
function agentSourcesOf(parts: DaemonParts): import("../agent/agents.js").AgentSource[] {
  const a = parts.extra.agents as import("../agent/host-service.js").AgentHostParts | undefined;
  return a ? [a.fileAgents, a.apiAgents] : [];
}
