/**
 * Discord attachments in: every attachment of a message (up to 10), in order, through the shared
 * batch of internal/media: voice messages and audio transcribed, text files and PDFs read, images
 * passed to the model as image input (the same code and limit key as Telegram), anything else named.
 */
import type { APIAttachment } from "discord.js";
import type { InboundChat, InboundRouter } from "../../inbound/chat-router.js";
import { attachmentsMessage, type BatchResult } from "../../media/attachment-batch.js";
import { downloadLimited } from "../../media/download.js";
import type { IncomingAttachment, InboundMediaDeps } from "../../media/inbound-media.js";

/** Message flag of a Discord voice message (recorded in the app). */
export const IS_VOICE_MESSAGE = 1 << 13;

/** What reading a message's attachments needs besides the shared media deps. */
export interface DiscordAttachmentDeps extends InboundMediaDeps {
  /** The message carries IS_VOICE_MESSAGE: its audio is a voice note. */
  voiceFlag: boolean;
  /** `channels.discord.media.max_image_bytes`. */
  maxImageBytes: number;
  onError?: (err: Error, name: string) => void;
}

/** Turns a message's attachments (with its text as caption) into one turn's text and images. */
export async function discordAttachments(
  atts: readonly APIAttachment[],
  chat: InboundChat,
  router: InboundRouter,
  deps: DiscordAttachmentDeps,
): Promise<BatchResult> {
  const agentId = router.agentFor(chat);
  return attachmentsMessage(
    atts.map((a) => incoming(a, deps.voiceFlag)),
    chat.text,
    deps,
    { agentId, sessionKey: router.sessionKey(chat, agentId), channel: "discord" },
    {
      maxImageBytes: deps.maxImageBytes,
      ...(deps.onError ? { onError: deps.onError } : {}),
    },
  );
}

/** A Discord attachment as the media module sees it; bytes come from Discord's CDN on demand. */
function incoming(att: APIAttachment, voiceFlag: boolean): IncomingAttachment {
  const mime = att.content_type?.split(";")[0]?.trim();
  return {
    kind: voiceFlag ? "voice" : mime?.startsWith("audio/") ? "audio" : "document",
    name: att.filename,
    uniqueId: att.id,
    ...(mime ? { mime } : {}),
    size: att.size,
    ...(att.duration_secs !== undefined ? { durationS: att.duration_secs } : {}),
    download: (max) => downloadLimited(att.url, max, { source: "Discord" }),
  };
}
