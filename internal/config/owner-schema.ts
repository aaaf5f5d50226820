/**
 * The `owner` section of config.yaml (merged into the one schema in internal/config/schema.ts): facts
 * about the owner that no single channel holds. `preferred_channel` is where a reply goes when the
 * chat it was asked in cannot take it (a reminder asked in the web chat while no browser shows it,
 * or one added by `familiar cron add`): a chat channel (`telegram`, `discord`: the owner's private
 * chat there, from `channels.<name>.owner`) or a target (`telegram:123456`, `discord:user:42`).
 * Documented in config.yaml, internal/config/config-template.yaml and docs/configuration.md.
 */
import { z } from "zod";
/** The chat channels that have an owner setting (as config/channel-owner.ts names them). */
type OwnedChannel = "telegram" | "discord";

/** The chat channels a preferred channel may name. */
const CHANNELS: readonly OwnedChannel[] = ["telegram", "discord"];

const preferredChannel = z
  .string()
  .refine((v) => CHANNELS.some((c) => v === c || (v.startsWith(`${c}:`) && v.length > c.length + 1)), {
    error: (i) =>
      `expected telegram, discord or a target such as telegram:123456, got ${JSON.stringify(i.input)}`,
  });

export const ownerSchema = z
  .object({
    /** Where replies go when the chat they were asked in cannot take them (see the file header). */
    preferred_channel: preferredChannel.optional(),
  })
  .strict()
  .prefault({});

export type OwnerConfig = z.infer<typeof ownerSchema>;

/** The channel a `preferred_channel` value names bare (`telegram`), else undefined (a target). */
export function bareChannel(v: string): OwnedChannel | undefined {
  return CHANNELS.find((c) => c === v);
}

/**
 * Why the preferred channel cannot be used (a bare channel name whose channel names no owner), for
 * the schema's check; undefined when it can. `ownerOf` gives the owner's private chat on a channel.
 */
export function preferredChannelProblem(
  owner: OwnerConfig,
  ownerOf: (channel: OwnedChannel) => string | undefined,
): string | undefined {
  const bare = owner.preferred_channel === undefined ? undefined : bareChannel(owner.preferred_channel);
  if (!bare || ownerOf(bare) !== undefined) return undefined;
  return `"${bare}" names no chat: channels.${bare}.owner (or allow_from) is empty; set it, or give a target such as ${bare === "telegram" ? "telegram:123456" : "discord:user:123456"}`;
}
