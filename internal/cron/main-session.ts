/**
 * Tracks the owner's main session per agent for `session: main` cron jobs: the session of the turn the
 * owner last started from the channel target the registry remembers as `last` (where the owner last
 * wrote), kept in the store so a restart does not forget it. Falls back to the agent's gateway main
 * session (`agent:<id>:gateway:main`).
 */
import type { EventBus } from "../core/event-bus.js";
import type { Outbox } from "../core/outbox.js";
import type { Db } from "../store/db.js";
import { KvNamespace } from "../store/kv.js";
import { sessionKeys } from "../session/keys.js";

/** Channels whose turns are not the owner talking (they never define the main session). */
const INTERNAL_CHANNELS = new Set(["cron", "heartbeat", "subagent", "hook", "api"]);

/** Where the main session per agent survives a restart (the core `kv` table in the daemon). */
export interface MainSessionStore {
  load(agentId: string): string | undefined;
  save(agentId: string, sessionKey: string): void;
}

/** A {@link MainSessionStore} over the core `kv` table. */
export function kvMainSessionStore(db: Db, now: () => number): MainSessionStore {
  const kv = new KvNamespace(db, "cron:main_session:", now);
  return {
    load: (agentId) => kv.get(agentId),
    save: (agentId, key) => kv.set(agentId, key),
  };
}

export class MainSessionTracker {
  private last = new Map<string, string>();
  private off: (() => void) | undefined;

  constructor(
    private bus: EventBus,
    private outbox: Outbox,
    private store?: MainSessionStore,
  ) {}

  start(): void {
    this.off ??= this.bus.on("chat", (p) => {
      if (p.event.type !== "turn_start" || INTERNAL_CHANNELS.has(p.channel)) return;
      const target = this.outbox.lastTarget();
      // Only turns from the channel the owner last wrote from: a stranger in a group is not "main".
      if (target !== undefined && (target === p.channel || target.startsWith(`${p.channel}:`))) {
        if (this.last.get(p.agentId) === p.sessionKey) return;
        this.last.set(p.agentId, p.sessionKey);
        try {
          this.store?.save(p.agentId, p.sessionKey);
        } catch {
          /* best effort: the in-memory choice still holds until the next restart */
        }
      }
    });
  }

  stop(): void {
    this.off?.();
    this.off = undefined;
  }

  /** The owner's main session key for `agentId`. */
  keyFor(agentId: string): string {
    let key = this.last.get(agentId);
    if (key === undefined) {
      try {
        key = this.store?.load(agentId);
      } catch {
        key = undefined;
      }
      if (key !== undefined) this.last.set(agentId, key);
    }
    return key ?? sessionKeys.gateway(agentId, "main");
  }
}
