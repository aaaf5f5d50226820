/** `/voice [on|off]`: spoken answers in this chat (off by default; needs `media.speech`). */
import type { MediaParts } from "../media/media-parts.js";

/** The part of the command context `/voice` reads (commands.ts imports this file, not back). */
export interface VoiceCommandScope {
  chatScope: string;
}

/** Runs `/voice`; returns the reply. */
export function voiceCommand(arg: string, c: VoiceCommandScope, media: MediaParts | undefined): string {
  if (!media) return "Voice replies are not available here.";
  const a = arg.trim().toLowerCase();
  const on = media.voicePrefs.isOn(c.chatScope);
  if (!a)
    return `Voice replies are ${on ? "on" : "off"} in this chat. Use /voice on or /voice off.${
      media.audio.speechEnabled() ? "" : " (Speech is not configured: set media.speech.provider.)"
    }`;
  if (a !== "on" && a !== "off") return "Usage: /voice on|off";
  if (a === "off") {
    media.voicePrefs.set(c.chatScope, false);
    return "Voice replies are off in this chat.";
  }
  if (!media.audio.speechEnabled())
    return "Voice replies need a speech provider: set media.speech.provider in config.yaml.";
  media.voicePrefs.set(c.chatScope, true);
  return "Voice replies are on in this chat: answers come as voice notes with the text as caption.";
}
