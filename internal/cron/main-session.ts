/**
 * Tracks the owner's main session per agent for `session: main` cron jobs: the session of the turn the
 * owner last started from the channel target the registry remembers as `last` (where the owner last
 * wrote). Falls back to the agent's gateway main session (`agent:<id>:gateway:main`).
 */
import type { EventBus } from "../core/event-bus.js";
import type { ChannelRegistry } from "../channels/registry.js";
import { sessionKeys } from "../session/keys.js";

/** Channels whose turns are not the owner talking (they never define the main session). */
const INTERNAL_CHANNELS = new Set(["cron", "heartbeat", "subagent", "hook", "api"]);

export class MainSessionTracker {
  private last = new Map<string, string>();
  private off: (() => void) | undefined;

  constructor(
    private bus: EventBus,
    private channels: ChannelRegistry,
  ) {}

  start(): void {
    this.off ??= this.bus.on("chat", (p) => {
      if (p.event.type !== "turn_start" || INTERNAL_CHANNELS.has(p.channel)) return;
      const target = this.channels.lastTarget();
      // Only turns from the channel the owner last wrote from: a stranger in a group is not "main".
      if (target !== undefined && (target === p.channel || target.startsWith(`${p.channel}:`)))
        this.last.set(p.agentId, p.sessionKey);
    });
  }

  stop(): void {
    this.off?.();
    this.off = undefined;
  }

  /** The owner's main session key for `agentId`. */
  keyFor(agentId: string): string {
    return this.last.get(agentId) ?? sessionKeys.gateway(agentId, "main");
  }
}
