/**
 * Who the owner is on a chat channel: explicit config, never inferred from who was paired.
 *
 * Invariants:
 * - `channels.<name>.owner` lists the owner's user ids; when it is absent the owner is whoever
 *   `allow_from` in config.yaml lists (config, never the pairing store, never `dm_policy: open`);
 *   when both are empty nobody on that channel is the owner (`familiar doctor` says so);
 * - only the owner answers approval questions in a chat; everyone else (a paired user, a group
 *   member) taints the session they write into.
 */
import type { Config } from "./schema.js";
import { bareChannel } from "./owner-schema.js";

/** The chat channels that have an owner setting. */
export type OwnedChannel = "telegram" | "discord";

/** The owner's ids on a channel and which key they came from. */
export interface ChannelOwners {
  ids: readonly string[];
  source: "owner" | "allow_from" | "none";
}

/** The owner's user ids on `channel` (see the module invariants). */
export function channelOwners(cfg: Config, channel: OwnedChannel): ChannelOwners {
  const c = cfg.channels[channel];
  if (c.owner !== undefined) return { ids: c.owner.map(String), source: "owner" };
  if (c.allow_from.length) return { ids: c.allow_from.map(String), source: "allow_from" };
  return { ids: [], source: "none" };
}

/** True when `userId` is the owner on `channel`. */
export function isChannelOwner(cfg: Config, channel: OwnedChannel, userId: string): boolean {
  return channelOwners(cfg, channel).ids.includes(String(userId));
}

/**
 * The owner's private chat on `channel`, where questions raised in a group or by a non-owner go:
 * `telegram:<id>` (a Telegram private chat's id is the user's), `discord:user:<id>` (a DM opened on
 * first use). Undefined when the channel has no owner.
 */
export function ownerChatTarget(cfg: Config, channel: OwnedChannel): string | undefined {
  const first = channelOwners(cfg, channel).ids[0];
  if (first === undefined) return undefined;
  return channel === "telegram" ? `telegram:${first}` : `discord:user:${first}`;
}

/** True when the owner opted this chat in to USER.md, MEMORY.md and memory search (`private_context`). */
export function privateContextAllowed(cfg: Config, channel: OwnedChannel, chatId: string): boolean {
  return cfg.channels[channel].private_context.map(String).includes(String(chatId));
}

/**
 * Where `owner.preferred_channel` delivers: the value itself when it is a target, the owner's private
 * chat on the channel it names otherwise; undefined when unset (or the channel has no owner, which
 * the config check refuses).
 */
export function preferredTarget(cfg: Config): string | undefined {
  const v = cfg.owner.preferred_channel;
  if (v === undefined) return undefined;
  const bare = bareChannel(v);
  return bare ? ownerChatTarget(cfg, bare) : v;
}
