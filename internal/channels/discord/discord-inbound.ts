/**
 * Discord messages in: translates a MESSAGE_CREATE dispatch into the front desk's `InboundChat`,
 * after the channel's gates (bots and webhooks, DM pairing, guild allow lists and mentions) and the
 * replay guard (a message id is claimed once, so a RESUME or a restart never answers twice). What it
 * refuses it answers itself (pairing codes, unreadable attachments) or drops silently.
 */
import type { GatewayMessageCreateDispatchData } from "discord.js";
import type { Config } from "../../config/schema.js";
import type { CoreContext } from "../../runtime/context.js";
import type { InboundChat, InboundRouter } from "../../inbound/chat-router.js";
import type { AudioClient } from "../../media/audio-client.js";
import { pairingReply, type PairingStore } from "../common/pairing.js";
import type { StreamRelay } from "../common/stream-relay.js";
import type { ChannelIdentities } from "./channel-identities.js";
import { guildVerdict, isAddressed, stripBotMention } from "./guild-gate.js";
import type { SeenStore } from "./seen-store.js";
import { discordAttachment, IS_VOICE_MESSAGE } from "./attachments.js";

/** What the translation reads of the running channel. */
export interface DiscordInboundEnv {
  ctx: CoreContext;
  cfg: Config["channels"]["discord"];
  me: { id: string; username: string };
  pairing: PairingStore;
  seen: SeenStore;
  relay: StreamRelay;
  identities: ChannelIdentities;
  /** Routing and session keys, for the usage record of a transcription. */
  router: InboundRouter;
  audio: AudioClient;
}

/** The `InboundChat` of a message, or undefined when it is not for the agent (answered or dropped). */
export async function translateMessage(
  env: DiscordInboundEnv,
  d: GatewayMessageCreateDispatchData,
): Promise<InboundChat | undefined> {
  const { me } = env;
  if (d.author.bot || d.author.id === me.id || d.webhook_id) return undefined;
  if (d.type !== 0 && d.type !== 19) return undefined;
  const { cfg } = env;
  const sender = { id: d.author.id, name: d.author.global_name ?? d.author.username };
  let text = d.content;
  const base: Omit<InboundChat, "text"> = {
    channel: "discord",
    chatId: d.channel_id,
    isGroup: d.guild_id !== undefined,
    sender,
    botUsername: me.username,
  };
  if (d.guild_id === undefined) {
    const decision = env.pairing.check("discord", cfg.dm_policy, cfg.allow_from, {
      ...sender,
      chatId: d.channel_id,
    });
    if (decision.kind === "ignore") return undefined;
    if (decision.kind !== "allow") {
      if (!env.seen.claim(d.id)) return undefined;
      await env.relay.errorReply(d.channel_id, "pairing", pairingReply(decision, sender.id));
      return undefined;
    }
    base.originLabel = `Discord DM from ${sender.name}`;
  } else {
    // Cheap checks first: unlisted guilds and unaddressed chatter never cost a REST lookup.
    const quick = guildVerdict(cfg, d.guild_id, { id: d.channel_id });
    if (!cfg.guilds[d.guild_id] && !cfg.guilds["*"]) return undefined;
    if (quick.requireMention && !isAddressed(d, me.id)) return undefined;
    const ident = quick.allowed ? { id: d.channel_id } : await env.identities.identify(d.channel_id);
    if (!quick.allowed && !guildVerdict(cfg, d.guild_id, ident).allowed) return undefined;
    text = stripBotMention(text, me.id);
    base.guildId = d.guild_id;
    const where = ident.names?.[0] ? `#${ident.names[0]}` : `channel ${d.channel_id}`;
    base.originLabel = `Discord ${where} from ${sender.name}`;
  }
  const att = d.attachments[0];
  if (att) {
    // Claimed before the download and transcription: a replay never costs a second call.
    if (!env.seen.claim(d.id)) return undefined;
    const out = await discordAttachment(att, { ...base, text }, env.router, {
      config: () => env.ctx.config(),
      audio: env.audio,
      clock: env.ctx.clock,
      channel: "discord",
      // "typing" while a voice message is transcribed.
      typing: () => void env.relay.adapter.typing(d.channel_id).catch(() => undefined),
      voiceFlag: ((d.flags ?? 0) & IS_VOICE_MESSAGE) !== 0,
    });
    if ("reply" in out) {
      await env.relay.sendText(d.channel_id, out.reply, { markdown: false }).catch(() => undefined);
      return undefined;
    }
    return { ...base, text: out.text };
  }
  if (!text.trim()) return undefined;
  // Claimed before answering: a replay (after RESUME or a restart) is never answered twice.
  if (!env.seen.claim(d.id)) {
    env.ctx.logger.debug({ channel: "discord", id: d.id }, "discord: duplicate message ignored");
    return undefined;
  }
  return { ...base, text };
}
