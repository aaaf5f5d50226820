/**
 * Channel registry: maps target prefixes to adapters for proactive delivery, and tracks the
 * owner's last active target (heartbeat/cron `last`).
 */
import { ChannelError, type OutboundFile, type Outbox, type SendOptions } from "../core/outbox.js";
import type { Channel, ChannelStatus } from "./channel.js";

/** Keeps the last target across restarts (the daemon backs it with the core kv table). */
export interface LastTargetStore {
  load(): string | undefined;
  save(target: string): void;
}

/** The channels that are running, by id; the daemon's {@link Outbox}. */
export class ChannelRegistry implements Outbox {
  private channels = new Map<string, Channel>();
  private last: string | undefined;
  private loaded = false;
  /** The owner's last target on each channel (this run only): where to reach them when one dies. */
  private lastByChannel = new Map<string, string>();

  constructor(private lastStore?: LastTargetStore) {}

  add(ch: Channel): void {
    this.channels.set(ch.id, ch);
  }
  remove(id: string): void {
    this.channels.delete(id);
  }
  get(id: string): Channel | undefined {
    return this.channels.get(id);
  }
  list(): Channel[] {
    return [...this.channels.values()];
  }
  statuses(): Record<string, ChannelStatus> {
    const out: Record<string, ChannelStatus> = {};
    for (const [id, ch] of this.channels) out[id] = ch.status();
    return out;
  }
  /** Records the channel target the owner last wrote from. */
  setLastTarget(target: string): void {
    this.loaded = true;
    const idx = target.indexOf(":");
    if (idx > 0) this.lastByChannel.set(target.slice(0, idx), target);
    if (target === this.last) return;
    this.last = target;
    try {
      this.lastStore?.save(target);
    } catch {
      /* remembering is best effort: delivery works from memory until the next restart */
    }
  }
  /**
   * Where the owner can be reached on another channel than `avoid` that is connected: the last
   * target if it qualifies, else the owner's last target on any other connected channel.
   */
  ownerTargetAvoiding(avoid: string): string | undefined {
    const up = (t: string | undefined): t is string => {
      if (!t) return false;
      const id = t.slice(0, Math.max(0, t.indexOf(":")));
      return id !== "" && id !== avoid && this.channels.get(id)?.status().state === "connected";
    };
    const last = this.lastTarget();
    if (up(last)) return last;
    for (const t of this.lastByChannel.values()) if (up(t)) return t;
    return undefined;
  }

  lastTarget(): string | undefined {
    if (!this.loaded) {
      this.loaded = true;
      try {
        this.last ??= this.lastStore?.load();
      } catch {
        /* an unreadable store means "not known yet", as on a fresh install */
      }
    }
    return this.last;
  }
  /**
   * Delivers text to `<channel>:<rest>` (or `last`). Throws ChannelError for unknown targets.
   * `none` is a no-op.
   */
  async deliver(target: string, text: string, opts?: SendOptions): Promise<void> {
    if (target === "none" || target === "") return;
    const { channel, rest } = this.resolve(target);
    await channel.send(rest, text, opts);
  }

  /** The channel and address of `<channel>:<rest>` (or `last`); throws for unknown targets. */
  resolve(target: string): { channel: Channel; rest: string; target: string } {
    const resolved = target === "last" ? this.lastTarget() : target;
    if (!resolved)
      throw new ChannelError(
        "CHANNEL_UNKNOWN_TARGET",
        "no last channel target known yet (the owner has not written)",
      );
    const idx = resolved.indexOf(":");
    const id = idx < 0 ? resolved : resolved.slice(0, idx);
    const ch = this.channels.get(id);
    if (!ch)
      throw new ChannelError("CHANNEL_UNKNOWN_TARGET", `no channel "${id}" is running (target ${resolved})`);
    return { channel: ch, rest: idx < 0 ? "" : resolved.slice(idx + 1), target: resolved };
  }

  /** Closes an approval question in whichever channel sent it (buttons removed, `note` added). */
  async closeApproval(approvalId: string, note: string): Promise<void> {
    for (const ch of this.channels.values())
      if (ch.closeApproval && (await ch.closeApproval(approvalId, note))) return;
  }

  /** Sends a file to `<channel>:<rest>` (or `last`); CHANNEL_NO_FILES where the channel has none. */
  async deliverFile(target: string, file: OutboundFile): Promise<void> {
    const { channel, rest } = this.resolve(target);
    if (!channel.sendFile)
      throw new ChannelError("CHANNEL_NO_FILES", `the ${channel.id} channel cannot send files`);
    await channel.sendFile(rest, file);
  }
}
