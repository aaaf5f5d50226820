/**
 * Group access: which groups the bot answers in (`groups`: chat ids or `*`), and whether a group
 * message addresses the bot (@mention, reply to the bot, configured patterns, or a command), unless
 * `require_mention: false`.
 */
import type { Message } from "grammy/types";

export interface GroupConfig {
  groups: readonly (string | number)[];
  require_mention: boolean;
  mention_patterns: readonly string[];
}

export interface BotIdentity {
  id: number;
  username: string;
}

export function groupAllowed(cfg: GroupConfig, chatId: number): boolean {
  return cfg.groups.some((g) => String(g) === "*" || String(g) === String(chatId));
}

/** True when the message is addressed to the bot. */
export function isAddressed(cfg: GroupConfig, bot: BotIdentity, m: Message, text: string): boolean {
  if (!cfg.require_mention) return true;
  if (m.reply_to_message?.from?.id === bot.id) return true;
  const uname = bot.username.toLowerCase();
  // `@familiar_bot2` names another bot: the mention must end where the username ends.
  const mention = new RegExp(`@${uname.replace(/[^\w]/g, "")}(?![A-Za-z0-9_])`, "i");
  if (mention.test(text)) return true;
  for (const e of [...(m.entities ?? []), ...(m.caption_entities ?? [])]) {
    if (e.type === "text_mention" && e.user.id === bot.id) return true;
  }
  // Commands are addressed to every bot of the group (or to us when suffixed with @us).
  if (/^\/[a-zA-Z0-9_]+(@\w+)?(\s|$)/.test(text)) {
    const at = /^\/[a-zA-Z0-9_]+@(\w+)/.exec(text)?.[1];
    if (!at || at.toLowerCase() === uname) return true;
  }
  for (const p of cfg.mention_patterns) {
    try {
      if (new RegExp(p, "i").test(text)) return true;
    } catch {
      // An invalid pattern never matches (config validation reports it).
    }
  }
  return false;
}

/** Removes `@botname` mentions from the text the model sees. */
export function stripMention(text: string, username: string): string {
  const re = new RegExp(`@${username.replace(/[^\w]/g, "")}\\b`, "gi");
  return text
    .replace(re, "")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}
