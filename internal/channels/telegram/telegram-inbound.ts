/**
 * Telegram updates in: translates a message update into the front desk's `InboundChat`, after the
 * channel's own gates (bots, group allow-list and mentions, DM pairing) and media (a photo becomes
 * an image input, a file is saved in the workspace). What it refuses it answers itself (pairing
 * codes, unsupported media) or drops silently (strangers in groups, other bots).
 */
import type { Api } from "grammy";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import type { CoreContext } from "../../runtime/context.js";
import type { Config } from "../../config/schema.js";
import { pairingReply, type PairingStore } from "../common/pairing.js";
import { pressCommand, showId } from "../common/approval-buttons.js";
import type { StreamRelay } from "../common/stream-relay.js";
import { NOT_AN_APPROVER } from "../../inbound/front-desk.js";
import type { InboundChat, InboundRouter } from "../../inbound/chat-router.js";
import type { AudioClient } from "../../media/audio-client.js";
import { attachmentMessage } from "../../media/inbound-media.js";
import { MediaFailure } from "../../media/media-errors.js";
import { groupAllowed, isAddressed, stripMention } from "./group-gate.js";
import {
  download,
  fetchImage,
  mediaOf,
  MediaError,
  saveFile,
  type MediaDeps,
  type MediaKind,
} from "./media.js";

/** What the translation reads of the running channel. */
export interface TelegramInboundEnv {
  ctx: CoreContext;
  cfg: Config["channels"]["telegram"];
  me: UserFromGetMe;
  pairing: PairingStore;
  relay: StreamRelay;
  /** Aborts media downloads when the channel stops. */
  signal: AbortSignal;
  /** Routing and session keys, for the usage record of a transcription. */
  router: InboundRouter;
  audio: AudioClient;
  /** Shows "typing" while a voice note is transcribed. */
  typing: (addr: string) => void;
}

/**
 * The `InboundChat` of a message update, or undefined when it is not for the agent (already
 * answered here, or dropped).
 */
export async function translateMessage(
  env: TelegramInboundEnv,
  api: Api,
  token: string,
  apiRoot: string,
  u: Update,
): Promise<InboundChat | undefined> {
  const m = u.message;
  if (!m || !m.from || m.from.is_bot) return undefined;
  const { cfg, me, relay } = env;
  const chatId = String(m.chat.id);
  const isGroup = m.chat.type === "group" || m.chat.type === "supergroup";
  const senderName = [m.from.first_name, m.from.last_name].filter(Boolean).join(" ") || m.from.username;
  const sender = { id: String(m.from.id), ...(senderName ? { name: senderName } : {}) };
  let text = m.text ?? m.caption ?? "";
  if (isGroup) {
    if (!groupAllowed(cfg, m.chat.id)) return undefined;
    if (!isAddressed(cfg, { id: me.id, username: me.username }, m, text)) return undefined;
    text = stripMention(text, me.username);
  } else if (m.chat.type === "private") {
    const d = env.pairing.check("telegram", cfg.dm_policy, cfg.allow_from, { ...sender, chatId });
    if (d.kind === "ignore") return undefined;
    if (d.kind === "pair" || d.kind === "pair_full") {
      const reply = pairingReply(d, sender.id);
      if (d.kind === "pair" && d.fresh) await relay.sendText(chatId, reply, { markdown: false });
      else await relay.errorReply(chatId, "pairing", reply);
      return undefined;
    }
  } else return undefined;
  const threadId =
    m.is_topic_message && m.message_thread_id !== undefined ? String(m.message_thread_id) : undefined;
  const relayChatId = threadId ? `${chatId}:${threadId}` : chatId;
  const chat: InboundChat = {
    channel: "telegram",
    chatId,
    ...(threadId ? { threadId } : {}),
    isGroup,
    sender,
    text,
    relayChatId,
    botUsername: me.username,
    originLabel: isGroup
      ? `Telegram group "${"title" in m.chat ? m.chat.title : chatId}" (from ${senderName ?? sender.id})`
      : `Telegram DM from ${senderName ?? sender.id}`,
  };
  const media = mediaOf(m);
  if (media.kind !== "none") {
    const mdeps: MediaDeps = {
      api,
      apiRoot,
      token,
      maxImageBytes: cfg.media.max_image_bytes,
      signal: env.signal,
    };
    try {
      const handled = media.kind === "file" ? await attachment(env, chat, mdeps, media) : undefined;
      if (handled === "reply") return undefined;
      if (handled === "text") {
        /* the transcript or document text is the message now */
      } else if (media.kind === "image") chat.images = [await fetchImage(mdeps, media)];
      else if (cfg.media.save) {
        const rel = await saveFile(mdeps, env.ctx.config().workspace, media, env.ctx.clock.now());
        chat.text =
          `${text}\n\n[The user sent a file, saved in the workspace at ${rel}${media.mime ? ` (${media.mime})` : ""}]`.trim();
      } else {
        await relay.sendText(
          relayChatId,
          `${media.label} are not supported yet. Please send text or a photo.`,
          { markdown: false },
        );
        return undefined;
      }
    } catch (err) {
      const msg =
        err instanceof MediaError || err instanceof MediaFailure
          ? err.message
          : "I could not download that file from Telegram.";
      env.ctx.logger.warn({ err: (err as Error).message }, "telegram: media download failed");
      await relay.sendText(relayChatId, msg, { markdown: false }).catch(() => undefined);
      return undefined;
    }
  }
  if (!chat.text.trim() && !chat.images?.length) return undefined;
  return chat;
}

/**
 * Voice notes, audio and readable documents through the media module: `text` = the message now
 * carries the transcript/text (or, after a refusal, its caption and a note that the file was not
 * read), `reply` = the user got a refusal and there is nothing else to answer, undefined = not ours.
 */
async function attachment(
  env: TelegramInboundEnv,
  chat: InboundChat,
  mdeps: MediaDeps,
  media: Extract<MediaKind, { kind: "file" }>,
): Promise<"text" | "reply" | undefined> {
  if (media.role === "other") return undefined;
  const addr = chat.relayChatId ?? chat.chatId;
  const agentId = env.router.agentFor(chat);
  const out = await attachmentMessage(
    {
      kind: media.role,
      name: media.name,
      uniqueId: media.fileUniqueId,
      ...(media.mime ? { mime: media.mime } : {}),
      ...(media.size !== undefined ? { size: media.size } : {}),
      ...(media.durationS !== undefined ? { durationS: media.durationS } : {}),
      download: (max) => download(mdeps, media.fileId, max),
    },
    chat.text,
    {
      config: () => env.ctx.config(),
      audio: env.audio,
      clock: env.ctx.clock,
      channel: "telegram",
      typing: () => env.typing(addr),
    },
    { agentId, sessionKey: env.router.sessionKey(chat, agentId), channel: "telegram" },
  );
  if (!out) return undefined;
  if ("reply" in out) {
    await env.relay.sendText(addr, out.reply, { markdown: false }).catch(() => undefined);
    // The refusal is the file's one reply; the rest of the message (its caption) still goes on,
    // with a note for the model, as with several attachments (media/attachment-batch.ts).
    if (!chat.text.trim()) return "reply";
    chat.text = `${chat.text}\n\n[The user also attached "${media.name}", which was not read: ${out.reply}]`;
    return "text";
  }
  chat.text = out.text;
  // Containment: the file's text or the transcript is untrusted input.
  (chat.taint ??= []).push({
    kind: media.role === "document" ? "document" : "transcript",
    detail: media.name,
  });
  return "text";
}

/**
 * Answers an approve/deny button press: a refused press (unknown action, not an approver) is
 * answered at once; an accepted one runs as its command through the front desk (submitted before
 * this returns) and its reply answers the press. `accepted` says which `done` is.
 */
export function approvalButton(
  api: Api,
  q: NonNullable<Update["callback_query"]>,
  mayApprove: (userId: string) => boolean,
  router: InboundRouter,
  showAll?: (approvalId: string, userId: string) => Promise<string>,
): { accepted: boolean; done: Promise<unknown> } {
  const allowed = mayApprove(String(q.from.id));
  // `show:<id>`: the whole question, sent to the owner's private chat (never to the group).
  const show = showId(q.data ?? "");
  if (show !== undefined && allowed && showAll) {
    const done = showAll(show, String(q.from.id))
      .catch((err: unknown) => `Could not send it: ${(err as Error).message}`)
      .then((text) => api.answerCallbackQuery(q.id, { text: text.slice(0, 190) }).catch(() => undefined));
    return { accepted: true, done };
  }
  // `approve:<id>:<hash>[:host|:session]` (approval-buttons.ts): bound to the payload it showed.
  const command = pressCommand(q.data ?? "");
  if (command === undefined || !allowed) {
    const done = api
      .answerCallbackQuery(q.id, { text: allowed ? "Unknown action" : NOT_AN_APPROVER.slice(0, 190) })
      .catch(() => undefined);
    return { accepted: false, done };
  }
  const p = router.handle(callbackCommand(q, command));
  const done = p.then((out) =>
    api
      .answerCallbackQuery(q.id, { text: out.kind === "command" ? out.reply.slice(0, 190) : "" })
      .catch(() => undefined),
  );
  return { accepted: true, done };
}

/** An approve/deny button press as the command it stands for (`/approve <id> <hash>`, `/deny <id>`). */
export function callbackCommand(q: NonNullable<Update["callback_query"]>, command: string): InboundChat {
  const msg = q.message as Message | undefined;
  const chatId = String(msg?.chat.id ?? q.from.id);
  const isGroup = msg?.chat.type === "group" || msg?.chat.type === "supergroup";
  // The decision's reply goes to the topic the buttons are in.
  const threadId =
    msg?.is_topic_message && msg.message_thread_id !== undefined ? String(msg.message_thread_id) : undefined;
  return {
    channel: "telegram",
    chatId,
    ...(threadId ? { threadId, relayChatId: `${chatId}:${threadId}` } : {}),
    isGroup,
    sender: { id: String(q.from.id), name: q.from.first_name },
    text: command,
  };
}
