/**
 * What a guild allow list matches for a Discord channel: its id, its thread parent and their names,
 * looked up once per channel (cache first, then REST). The lookup promise is cached so messages of
 * one channel keep their arrival order; a failed lookup (gated as just the id) is retried next time.
 */
import { Routes, type Client } from "discord.js";
import type { Logger } from "../../log/logger.js";
import type { ChannelIdentity } from "./guild-gate.js";

const THREAD_TYPES = new Set([10, 11, 12]);

export class ChannelIdentities {
  private identities = new Map<string, Promise<ChannelIdentity>>();

  constructor(
    private client: () => Client,
    private logger: Logger,
  ) {}

  identify(channelId: string): Promise<ChannelIdentity> {
    const known = this.identities.get(channelId);
    if (known) return known;
    const lookup = this.lookup(channelId).catch((err: unknown): ChannelIdentity => {
      this.identities.delete(channelId);
      this.logger.warn(
        { channel: "discord", channelId, err: (err as Error).message },
        "discord: channel lookup failed",
      );
      return { id: channelId };
    });
    if (this.identities.size > 5000) this.identities.clear();
    this.identities.set(channelId, lookup);
    return lookup;
  }

  private async lookup(channelId: string): Promise<ChannelIdentity> {
    const info = async (id: string): Promise<{ name?: string; parentId?: string }> => {
      const client = this.client();
      const c = client.channels.cache.get(id);
      if (c) {
        const name = "name" in c && typeof c.name === "string" ? c.name : undefined;
        const parentId = c.isThread() ? (c.parentId ?? undefined) : undefined;
        return { ...(name ? { name } : {}), ...(parentId ? { parentId } : {}) };
      }
      const raw = (await client.rest.get(Routes.channel(id))) as {
        type: number;
        name?: string | null;
        parent_id?: string | null;
      };
      const parentId = THREAD_TYPES.has(raw.type) ? (raw.parent_id ?? undefined) : undefined;
      return { ...(raw.name ? { name: raw.name } : {}), ...(parentId ? { parentId } : {}) };
    };
    const self = await info(channelId);
    const names = self.name ? [self.name] : [];
    if (self.parentId) {
      const parent = await info(self.parentId).catch(() => ({ name: undefined }));
      if (parent.name) names.push(parent.name);
    }
    return { id: channelId, ...(self.parentId ? { parentId: self.parentId } : {}), names };
  }
}
