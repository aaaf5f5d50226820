/**
 * Daemon-wide event bus (typed). The gateway forwards these to websocket clients; metrics count them.
 */
import type { AgentEvent } from "./agent-events.js";

export interface BusEvents {
  /** Every agent event of every turn, tagged with its session. */
  chat: { sessionKey: string; agentId: string; channel: string; event: AgentEvent };
  "session.changed": { sessionKey: string; sessionId: string; reason: string };
  "config.reloaded": { changed: string[]; restartRequired: string[] };
  "config.error": { message: string };
  heartbeat: { status: string; detail?: string };
  cron: { jobId: string; status: string; detail?: string };
  "channel.state": { channel: string; state: string; detail?: string };
  /** Every service started and the gateway listening; deferred work (channel modules) begins here. */
  "daemon.ready": { ms: number };
}

type Handler<T> = (payload: T) => void;

export class EventBus {
  private handlers = new Map<keyof BusEvents, Set<Handler<never>>>();
  on<K extends keyof BusEvents>(event: K, fn: Handler<BusEvents[K]>): () => void {
    let set = this.handlers.get(event);
    if (!set) this.handlers.set(event, (set = new Set()));
    set.add(fn as Handler<never>);
    return () => set.delete(fn as Handler<never>);
  }
  /** Handlers run synchronously; a throwing handler never breaks the emitter or other handlers. */
  emit<K extends keyof BusEvents>(event: K, payload: BusEvents[K]): void {
    const set = this.handlers.get(event);
    if (!set) return;
    for (const fn of set) {
      try {
        (fn as Handler<BusEvents[K]>)(payload);
      } catch {
        /* a subscriber's bug must not break a turn */
      }
    }
  }
}
