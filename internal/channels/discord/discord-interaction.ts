/**
 * Discord interactions in: a slash command (type 2) or a button press (type 3) from an
 * INTERACTION_CREATE dispatch, gated like a message (DM pairing, guild allow lists), answered with
 * the interaction callback Discord requires within 3 s, and handed to the InboundRouter. An
 * interaction id is claimed once (SeenStore), so a replayed dispatch is answered once.
 */
import { Routes, type APIInteraction, type REST } from "discord.js";
import type { Config } from "../../config/schema.js";
import type { InboundChat, InboundRouter } from "../../inbound/chat-router.js";
import { NOT_AN_APPROVER } from "../../inbound/front-desk.js";
import { pairingReply, type PairingStore } from "../common/pairing.js";
import { pressCommand, showId } from "../common/approval-buttons.js";
import type { ChannelIdentities } from "./channel-identities.js";
import { interactionAddress, NO_MENTIONS, SUPPRESS_EMBEDS, type DiscordAdapter } from "./discord-adapter.js";
import { guildVerdict } from "./guild-gate.js";
import type { SeenStore } from "./seen-store.js";
import { commandText } from "./slash-commands.js";

const EPHEMERAL = 1 << 6;

/** What handling an interaction reads of the running channel. */
export interface DiscordInteractionEnv {
  cfg: Config["channels"]["discord"];
  me: { username: string; appId: string };
  rest: REST;
  pairing: PairingStore;
  seen: SeenStore;
  identities: ChannelIdentities;
  adapter: DiscordAdapter;
  router: InboundRouter;
  /** Whether a user may decide approvals (press approve/deny): the owner only. */
  mayApprove: (userId: string) => boolean;
  /** "Show all": sends the whole question to the presser's DM; returns the line to answer with. */
  showAll?: (approvalId: string, userId: string) => Promise<string>;
}

/** Answers one interaction: refuses it ephemerally, or acknowledges it and routes it as a chat turn. */
export async function handleInteraction(env: DiscordInteractionEnv, i: APIInteraction): Promise<void> {
  const { me, cfg } = env;
  if (i.type !== 2 && i.type !== 3) return;
  if (!env.seen.claim(`ix:${i.id}`)) return;
  const u = i.member?.user ?? i.user;
  const channelId = i.channel?.id ?? i.channel_id;
  if (!u || !channelId) return;
  const sender = { id: u.id, name: u.global_name ?? u.username };
  const callback = (body: Record<string, unknown>): Promise<unknown> =>
    env.rest.post(Routes.interactionCallback(i.id, i.token), { body, auth: false });
  const ephemeral = (content: string): Promise<unknown> =>
    callback({
      type: 4,
      data: { content, flags: EPHEMERAL | SUPPRESS_EMBEDS, allowed_mentions: NO_MENTIONS },
    });
  const inbound: InboundChat = {
    channel: "discord",
    chatId: channelId,
    isGroup: i.guild_id !== undefined,
    sender,
    text: "",
    botUsername: me.username,
    relayChatId: interactionAddress(me.appId, i.token),
    ...(i.guild_id ? { guildId: i.guild_id } : {}),
  };
  if (i.guild_id === undefined) {
    const d = env.pairing.check("discord", cfg.dm_policy, cfg.allow_from, {
      ...sender,
      chatId: channelId,
    });
    if (d.kind === "ignore") return void (await ephemeral("This assistant is private."));
    if (d.kind !== "allow") return void (await ephemeral(pairingReply(d, sender.id)));
  } else {
    const quick = guildVerdict(cfg, i.guild_id, { id: channelId }).allowed;
    if (!quick && !guildVerdict(cfg, i.guild_id, await env.identities.identify(channelId)).allowed)
      return void (await ephemeral("I am not enabled in this channel."));
  }
  if (i.type === 2) {
    const data = i.data as { name: string; options?: { name: string; value?: unknown }[] };
    inbound.text = commandText(data.name, data.options);
    await callback({ type: 5, data: { flags: SUPPRESS_EMBEDS } });
    env.adapter.registerInteraction(inbound.relayChatId ?? "", true);
  } else {
    const customId = (i.data as { custom_id?: string }).custom_id ?? "";
    const show = showId(customId);
    if (show !== undefined) {
      if (!env.mayApprove(sender.id) || !env.showAll) return void (await ephemeral(NOT_AN_APPROVER));
      const line = await env
        .showAll(show, sender.id)
        .catch((err: unknown) => `Could not send it: ${(err as Error).message}`);
      return void (await ephemeral(line));
    }
    // `approve:<id>:<hash>[:host|session]` (approval-buttons.ts): bound to the payload it showed.
    // A stranger's press leaves the buttons in place for the owner.
    if (!env.mayApprove(sender.id)) return void (await ephemeral(NOT_AN_APPROVER));
    const command = pressCommand(customId);
    if (command === undefined) return void (await ephemeral("Unknown action."));
    // Remove the buttons from the approval message; the decision goes out as a follow-up.
    await callback({ type: 7, data: { components: [] } });
    env.adapter.registerInteraction(inbound.relayChatId ?? "", false);
    inbound.text = command;
  }
  await env.router.handle(inbound);
}
