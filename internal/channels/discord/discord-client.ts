/**
 * The discord.js client as the Discord channel runs it (discord-channel.ts): which intents and caches
 * it is built with, and what an unrecoverable gateway close means to the owner.
 */
import { Client, GatewayIntentBits, Options, Partials } from "discord.js";
import type { Config } from "../../config/schema.js";

/** Discord's REST base when `channels.discord.api_base` is not set. */
export const DEFAULT_API_BASE = "https://discord.com/api";

/** A new (not logged in) client for the channel's config. */
export function createDiscordClient(cfg: Config["channels"]["discord"]): Client {
  return new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages,
    ],
    partials: [Partials.Channel],
    rest: { api: cfg.api_base ?? DEFAULT_API_BASE },
    // Nothing of ours reads message caches (we handle raw dispatches); keep memory flat.
    makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
  });
}

/**
 * The channel's error detail for a gateway close discord.js gave up on (it gives up only on
 * unrecoverable close codes: bad token, intents, ...).
 */
export function gatewayCloseDetail(code: number): string {
  return code === 4004
    ? "invalid token (channels.discord.token): Discord refused the gateway login"
    : code === 4014
      ? "the bot lacks privileged intents: enable MESSAGE CONTENT in the developer portal"
      : `gateway closed with code ${code}`;
}
