/**
 * The media parts a chat channel uses: the audio client (transcription, speech) and the per-chat
 * voice reply switch. Built once by the daemon (with the usage tracker) and shared by every channel.
 */
import type { CoreContext } from "../runtime/context.js";
import { AudioClient, type UsageSink } from "./audio-client.js";
import { VoicePrefs } from "./voice-prefs.js";

export interface MediaParts {
  audio: AudioClient;
  voicePrefs: VoicePrefs;
}

/** Builds the media parts; `usage` records transcription and speech like model calls. */
export function createMediaParts(ctx: CoreContext, usage?: UsageSink): MediaParts {
  return {
    audio: new AudioClient({
      config: () => ctx.config(),
      now: () => ctx.clock.now(),
      ...(usage ? { usage } : {}),
    }),
    voicePrefs: new VoicePrefs(ctx.db, () => ctx.clock.now()),
  };
}
