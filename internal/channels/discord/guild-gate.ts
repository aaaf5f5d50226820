/**
 * Who the bot answers in guilds: `channels.discord.guilds.<guildId>.channels` allow lists (channel ids
 * or names, `*` = every channel; a thread follows its parent channel) and mention gating (answer only when mentioned or
 * replied to, unless `require_mention: false` on the guild or the whole channel config).
 * A guild that is not listed (and no `*` guild entry) is ignored entirely.
 */

export interface GuildGateConfig {
  guilds: Record<string, { channels: string[]; require_mention: boolean }>;
  require_mention: boolean;
}

export interface GuildVerdict {
  allowed: boolean;
  requireMention: boolean;
}

/** What identifies a channel for the allow list: its id, its thread parent, and their names. */
export interface ChannelIdentity {
  id: string;
  parentId?: string;
  /** Names of the channel and of its parent (matched with or without a leading `#`). */
  names?: readonly string[];
}

/** Whether a guild channel (or a thread of an allowed parent) is allowed, and if it needs a mention. */
export function guildVerdict(cfg: GuildGateConfig, guildId: string, ch: ChannelIdentity): GuildVerdict {
  const g = cfg.guilds[guildId] ?? cfg.guilds["*"];
  if (!g) return { allowed: false, requireMention: true };
  const list = new Set(g.channels.map((c) => c.replace(/^#/, "").toLowerCase()));
  const keys = [ch.id, ch.parentId, ...(ch.names ?? [])].filter((k): k is string => !!k);
  const allowed = list.has("*") || keys.some((k) => list.has(k.toLowerCase()));
  return { allowed, requireMention: g.require_mention && cfg.require_mention };
}

/** The parts of a MESSAGE_CREATE the mention check reads. */
export interface MentionSource {
  content: string;
  mentions?: readonly { id: string }[];
  referenced_message?: { author?: { id: string } } | null;
}

/** True when the message mentions the bot (`<@id>` / `<@!id>`) or replies to one of its messages. */
export function isAddressed(m: MentionSource, botId: string): boolean {
  if (m.mentions?.some((u) => u.id === botId)) return true;
  if (m.content.includes(`<@${botId}>`) || m.content.includes(`<@!${botId}>`)) return true;
  return m.referenced_message?.author?.id === botId;
}

/** Removes the bot's mentions from the text (so `@bot /status` is the command `/status`). */
export function stripBotMention(text: string, botId: string): string {
  return text
    .replace(new RegExp(`<@!?${botId}>`, "g"), " ")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}
