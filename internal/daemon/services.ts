/**
 * The wiring root: builds the daemon's one typed object graph in numbered steps and returns the
 * services in start order (the daemon stops them in reverse). Every part is a named, typed field of
 * `DaemonParts`; nothing is looked up by name, nothing is cast. Parts a config does not use are
 * imported lazily: the gateway, the chat channels (and, inside the parts, SDKs and parsers on first
 * use). The parts every daemon builds are imported statically: as one bundle chunk they load in a
 * few module jobs instead of dozens (issue 38, measured: ESM resolution and linking per chunk was
 * the largest share of a start after compiling).
 *
 * Build order and start order are the same except where a part is handed to one built before it
 * starts (the gateway reads cron and heartbeat at call time): those are built first, started later.
 */
import { closedNote } from "../tools/approval-text.js";
import type { ConfigManager } from "../config/manager.js";
import type { CoreContext, Service } from "../runtime/context.js";
import type { HttpServer } from "../gateway/http-server.js";
import type { GatewayService } from "../gateway/service.js";
import type { ChannelRegistry } from "../channels/registry.js";
import type { AgentHostImpl } from "../agent/host.js";
import type { Tool } from "../tools/tool.js";
import { createToolsService, type ToolsParts } from "./tools-service.js";
import { createAgentHostService, type AgentHostParts } from "../agent/host-service.js";
import { FrontDesk } from "../inbound/front-desk.js";
import { createHeartbeatService, type HeartbeatService } from "../heartbeat/heartbeat-service.js";
import { createCronService, type CronService } from "../cron/cron-service.js";
import { createCronTool } from "../cron/cron-tool.js";
import { DiskWatch } from "../runtime/disk-watch.js";
import { createMediaParts, type MediaParts } from "../media/media-parts.js";
import { createSendFileTool } from "../tools/send-file-tool.js";
import { DeferredChannel, type ServiceChannel } from "../channels/deferred-channel.js";
import { createChannelWatchdog, type ChannelWatchdog } from "../channels/channel-watchdog.js";
import { createBackupService, type BackupService } from "./backup-service.js";
import { createModelRouter, type ModelRouter } from "../models/router.js";
import { UsageTracker } from "../agent/usage/usage-tracker.js";
import {
  contextWindowFindings,
  resolveContextWindow,
  validateContextWindow,
} from "../models/context-window.js";

/** Every part of a running daemon, for the daemon itself, the CLI's in-process uses and tests. */
export interface DaemonParts {
  config: ConfigManager;
  http: HttpServer;
  /** The running channels; also the Outbox every feature delivers through. */
  channels: ChannelRegistry;
  router: ModelRouter;
  usage: UsageTracker;
  tools: ToolsParts;
  agents: AgentHostParts;
  host: AgentHostImpl;
  heartbeat: HeartbeatService;
  cron: CronService;
  /** Transcription, speech and the per-chat voice switch, shared by the channels. */
  media: MediaParts;
  /** The send_file tool (registered in `tools`). */
  sendFile: Tool;
  /** The one front desk every door passes through. */
  desk: FrontDesk;
  /** Undefined when `gateway.enabled` is false. */
  gateway: GatewayService | undefined;
  telegram: DeferredChannel;
  discord: DeferredChannel;
  /** Restarts a dead or silent channel, then reports it (its health error turns /healthz degraded). */
  watchdog: ChannelWatchdog;
  /** Scheduled backups with retention (config `backup`). */
  backup: BackupService;
}

/** Builds every part and returns the services in start order. */
export async function buildServices(
  ctx: CoreContext,
  http: HttpServer,
  channels: ChannelRegistry,
  config: ConfigManager,
): Promise<{ parts: DaemonParts; services: Service[] }> {
  // 1. Models: the router reads ctx.config() on every call (hot reload); the openai SDK loads on the
  //    first call. Usage is recorded per call by the agent host.
  const { router, usage } = await buildModels(ctx);

  // 2. Tools, skills, memory, MCP: the registry holds the built-ins; later steps add theirs.
  //    Approval requests of a gateway turn go to its live connection (`gateway:conn:<id>`, step 5);
  //    every other target to the chat channels.
  let gatewayOut: Pick<GatewayService, "deliver"> | undefined;
  const delivery: Pick<ChannelRegistry, "deliver"> = {
    deliver: (target, text, opts) =>
      gatewayOut && target.startsWith("gateway:conn:")
        ? gatewayOut.deliver(target, text, opts)
        : channels.deliver(target, text, opts),
  };
  const tools = createToolsService(ctx, {
    channels: delivery,
    configFile: config.file,
    usage,
    afterReady: afterDaemonReady(ctx),
  });

  // 2b. A question that closes (answered, expired, withdrawn) loses its buttons in the chat.
  tools.approvals.onClosed((a, out) => {
    void channels.closeApproval(a.id, closedNote(out)).catch((err: unknown) => {
      ctx.logger.warn({ id: a.id, err: (err as Error).message }, "could not close an approval question");
    });
  });

  // 3. The agent host: turns, sessions, subagents, engines. It delivers through the Outbox.
  const agents = createAgentHostService(ctx, { router, usage, tools, outbox: channels });
  const host = agents.host;

  // 3b. The front desk: the one way in for every door (channels, chat.send, /v1, /api, webhooks):
  //     routing to an agent, session keys, commands, submit.
  const desk = new FrontDesk({
    ctx,
    host,
    // File and API agents, so `/agent <id>`, routing and named agents reach them too.
    agentSources: [agents.fileAgents, agents.apiAgents],
    approvals: tools.approvals,
  });

  // 4. Heartbeat and cron: built even when off (heartbeat.every 0, cron.enabled false) so they follow
  //    hot reloads. croner loads only when a cron expression is first parsed.
  const heartbeat = createHeartbeatService(ctx, { host, outbox: channels });
  // A reminder asked in the web chat or `familiar chat` goes back into that session: the gateway
  // (built in step 5) posts it there.
  let sessionPost: GatewayService["sessionPost"] | undefined;
  const cron = createCronService(ctx, { host, outbox: channels, sessions: () => sessionPost });
  tools.registry.register(
    createCronTool(cron, { allowedTargets: () => ctx.config().tools.send_message.allowed_targets }),
  );

  // 4b. The data dir's free disk space: told to the owner once when low, shown in /healthz and status.
  const disk = new DiskWatch(ctx, {
    deliver: async (target, text) => {
      await channels.deliver(target, text);
    },
  });

  // 5. The gateway: HTTP and websocket doors on the daemon's one listener. It receives the narrow
  //    parts it uses, never the daemon.
  let gateway: GatewayService | undefined;
  if (ctx.config().gateway.enabled) {
    const { createGatewayService } = await import("../gateway/service.js");
    gateway = createGatewayService(ctx, {
      http,
      config,
      channels,
      agents,
      frontDesk: desk,
      router,
      usage,
      cron,
      heartbeat,
      memory: tools.memory,
      approvals: tools.approvals,
      containment: tools.containment,
      disk,
    });
    gatewayOut = gateway;
    sessionPost = gateway.sessionPost;
  }

  // 6. Media: transcription, speech, documents, and the send_file tool. The openai SDK and unpdf
  //    load on the first voice note / PDF, never at start.
  const media = createMediaParts(ctx, usage);
  const sendFile = createSendFileTool({ config: () => ctx.config(), channels });
  tools.registry.register(sendFile);

  // 7. Telegram and Discord: grammy + marked and discord.js load only when their channel is enabled,
  //    and only after the daemon is up (the import is most of a cold start). A channel connects in the
  //    background; a bad token leaves it in state "error" (shown in /healthz) while the daemon runs.
  //    Built (but not loaded) when off too: a hot reload that sets enabled: true starts it.
  const chatDeps = {
    desk,
    host,
    registry: channels,
    // File and API agents, so `/agent <id>` and routing reach them too.
    agentSources: [agents.fileAgents, agents.apiAgents],
    approvals: tools.approvals,
    media,
  };
  const deferred = (id: "telegram" | "discord", load: () => Promise<ServiceChannel>) =>
    new DeferredChannel(id, load, ctx.logger, afterDaemonReady(ctx), {
      enabled: () => ctx.config().channels[id].enabled,
      onConfig: (fn) => ctx.onConfig(fn),
      onEnabled: (ch) => channels.add(ch),
    });
  const telegram = deferred("telegram", async () =>
    (await import("../channels/telegram/telegram-channel.js")).createTelegramChannel(ctx, chatDeps),
  );
  const discord = deferred("discord", async () =>
    (await import("../channels/discord/discord-channel.js")).createDiscordChannel(ctx, chatDeps),
  );
  // 7b. The channel watchdog: a channel down or silent is restarted, then reported (docs/channel-health.md).
  const watchdog = createChannelWatchdog(ctx, channels);
  // 8. Scheduled backups (off by default; `familiar backup` works either way).
  const backup = createBackupService(ctx, { configFile: config.file, outbox: channels });

  const parts: DaemonParts = {
    config,
    http,
    channels,
    router,
    usage,
    tools,
    agents,
    host,
    desk,
    heartbeat,
    cron,
    gateway,
    media,
    sendFile,
    telegram,
    discord,
    watchdog,
    backup,
  };
  // Start order: tools -> agent host -> gateway routes -> channels -> heartbeat -> cron.
  const services: Service[] = [
    tools.service,
    agents.service,
    ...(gateway ? [gateway] : []),
    telegram,
    discord,
    watchdog,
    heartbeat,
    cron,
    disk,
    backup,
  ];
  return { parts, services };
}

/** Step 1: the model router and usage tracker, and the warning when no provider is configured. */
async function buildModels(ctx: CoreContext): Promise<{ router: ModelRouter; usage: UsageTracker }> {
  const router = createModelRouter({ config: () => ctx.config(), logger: ctx.logger, clock: ctx.clock });
  const usage = new UsageTracker({
    db: ctx.db,
    config: () => ctx.config(),
    clock: ctx.clock,
    // A model with no price, said once and loudly when its first call is recorded.
    warn: (message) => ctx.logger.warn({ module: "usage" }, message),
  });
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
    // Every agent's own model too (the chain above is the primary and fallbacks only).
    for (const f of contextWindowFindings(ctx.config()))
      if (!f.path.startsWith("models."))
        ctx.logger[f.level === "error" ? "error" : "warn"](
          { module: "models", key: f.path },
          `${f.path}: ${f.message}`,
        );
  };
  checkModels();
  ctx.onConfig((_next, _prev, changed) => {
    if (
      changed.some(
        (c) => c === "models" || c.startsWith("models.") || c === "agents" || c.startsWith("agents."),
      )
    )
      checkModels();
  });
  return { router, usage };
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
