/**
 * Spoken answers (`/voice on`): the final text is synthesised through `media.speech` and sent as a
 * voice note (Telegram) or audio attachment (Discord) with the text as its caption (a caption over
 * the platform's limit follows as messages). When speech fails the caller delivers the text as
 * usual: a voice reply never costs the answer.
 */
import type { MediaCallScope } from "../media/audio-client.js";
import type { MediaParts } from "../media/media-parts.js";
import { stripMarkdown } from "../media/strip-markdown.js";
import type { ReplyRelay } from "./reply-relay.js";

export { stripMarkdown };

/** True when this chat asked for voice and both speech and the platform can deliver it. */
export function voiceWanted(media: MediaParts | undefined, relay: ReplyRelay, scope: string): boolean {
  return (
    media !== undefined &&
    relay.adapter.sendFile !== undefined &&
    media.audio.speechEnabled() &&
    media.voicePrefs.isOn(scope)
  );
}

/** Speaks `text` into the chat. True when the voice note (with the text) went out. */
export async function speakReply(
  media: MediaParts,
  relay: ReplyRelay,
  chatId: string,
  text: string,
  scope: MediaCallScope,
): Promise<boolean> {
  const send = relay.adapter.sendFile?.bind(relay.adapter);
  if (!send || !text.trim()) return false;
  try {
    const data = await media.audio.speak(stripMarkdown(text), scope);
    await send(chatId, { name: "answer.ogg", data, kind: "voice", mime: "audio/ogg", caption: text });
    return true;
  } catch (err) {
    relay.logger?.warn({ err: (err as Error).message, chatId }, "voice reply failed; sending text");
    return false;
  }
}
