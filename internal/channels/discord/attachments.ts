/**
 * Discord attachments in: voice messages and audio files are transcribed, text files and PDFs read
 * (internal/media), anything else is named in the message so the model knows it was there.
 */
import type { APIAttachment } from "discord.js";
import type { InboundChat, InboundRouter } from "../../inbound/chat-router.js";
import {
  attachmentMessage,
  type InboundMediaDeps,
  type InboundMediaResult,
} from "../../media/inbound-media.js";
import { MediaFailure, mb } from "../../media/media-errors.js";

/** Message flag of a Discord voice message (recorded in the app). */
export const IS_VOICE_MESSAGE = 1 << 13;

/** Turns the message's first attachment into the user message, or a reply for the chat. */
export async function discordAttachment(
  att: APIAttachment,
  chat: InboundChat,
  router: InboundRouter,
  deps: InboundMediaDeps & { voiceFlag: boolean },
): Promise<InboundMediaResult> {
  const mime = att.content_type?.split(";")[0]?.trim();
  const kind = deps.voiceFlag ? "voice" : mime?.startsWith("audio/") ? "audio" : "document";
  const agentId = router.agentFor(chat);
  const out = await attachmentMessage(
    {
      kind,
      name: att.filename,
      uniqueId: att.id,
      ...(mime ? { mime } : {}),
      size: att.size,
      ...(att.duration_secs !== undefined ? { durationS: att.duration_secs } : {}),
      download: (max) => fetchAttachment(att.url, max),
    },
    chat.text,
    deps,
    { agentId, sessionKey: router.sessionKey(chat, agentId) },
  );
  if (out) return out;
  // Not something we read (an image, a video, a zip): the text still counts, and says what came with it.
  if (chat.text.trim())
    return { text: `${chat.text}\n\n[The user also attached "${att.filename}", which I cannot open]` };
  return {
    reply: `I can read text, voice messages, audio, text files and PDFs here, but not "${att.filename}".`,
  };
}

/** Downloads an attachment from Discord's CDN, refusing more than `maxBytes`. */
async function fetchAttachment(url: string, maxBytes: number): Promise<Buffer> {
  const res = await fetch(url);
  if (!res.ok)
    throw new MediaFailure(
      "MEDIA_PROVIDER_FAILED",
      `Downloading the file from Discord failed (${res.status}).`,
    );
  const buf = Buffer.from(await res.arrayBuffer());
  if (buf.length > maxBytes)
    throw new MediaFailure(
      "MEDIA_TOO_LARGE",
      `The file is too large (${mb(buf.length)}; the limit is ${mb(maxBytes)}).`,
    );
  return buf;
}
