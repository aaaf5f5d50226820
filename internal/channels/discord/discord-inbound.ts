/**
 * Discord messages in: translates a MESSAGE_CREATE dispatch into the front desk's `InboundChat`,
 * after the channel's gates (bots and webhooks, DM pairing, guild allow lists and mentions) and the
 * replay guard (a message id is claimed once, so a RESUME or a restart never answers twice). What it
 * refuses it answers itself (pairing codes, refused attachments) or drops silently. Every attachment
 * of a message is read (internal/media/attachment-batch.ts) into one turn.
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
import { discordAttachments, IS_VOICE_MESSAGE } from "./attachments.js";

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
  if (d.attachments.length > 0) {
    // Claimed once, before any download or transcription: a replay never costs a second call.
    if (!env.seen.claim(d.id)) return undefined;
    const chat = { ...base, text };
    const out = await discordAttachments(d.attachments, chat, env.router, {
      config: () => env.ctx.config(),
      audio: env.audio,
      clock: env.ctx.clock,
      channel: "discord",
      // "typing" while a voice message is transcribed.
      typing: () => void env.relay.adapter.typing(d.channel_id).catch(() => undefined),
      voiceFlag: ((d.flags ?? 0) & IS_VOICE_MESSAGE) !== 0,
      maxImageBytes: cfg.media.max_image_bytes,
      onError: (err, name) =>
        env.ctx.logger.warn(
          { channel: "discord", file: name, err: err.message },
          "discord: attachment failed",
        ),
    });
    // Refusals first, one message; the rest of the message still reaches the model.
    if (out.replies.length)
      await env.relay
        .sendText(d.channel_id, out.replies.join("\n"), { markdown: false })
        .catch(() => undefined);
    if (!out.hasContent) return undefined;
    // Containment: a file's text or a transcript is untrusted input (images are marked by the router).
    const files = d.attachments.filter((a) => !a.content_type?.startsWith("image/"));
    const taint = files.map((a) => ({
      kind:
        a.content_type?.startsWith("audio/") || (d.flags ?? 0) & IS_VOICE_MESSAGE
          ? ("transcript" as const)
          : ("document" as const),
      detail: a.filename,
    }));
    return {
      ...chat,
      text: out.text,
      ...(out.images.length ? { images: out.images } : {}),
      ...(taint.length ? { taint } : {}),
    };
  }
  if (!text.trim()) return undefined;
  // Claimed before answering: a replay (after RESUME or a restart) is never answered twice.
  if (!env.seen.claim(d.id)) {
    env.ctx.logger.debug({ channel: "discord", id: d.id }, "discord: duplicate message ignored");
    return undefined;
  }
  return { ...base, text };
}
