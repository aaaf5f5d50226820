/**
 * The media parts a chat channel uses: the audio client (transcription, speech) and the per-chat
 * voice reply switch. Built once by the daemon (with the usage tracker) and shared by every channel.
 */
import type { CoreContext } from "../runtime/context.js";
import { AudioClient, type MediaBudget, type UsageSink } from "./audio-client.js";
import { BudgetGuard } from "../budgets/budget-guard.js";
import { VoicePrefs } from "./voice-prefs.js";

export interface MediaParts {
  audio: AudioClient;
  voicePrefs: VoicePrefs;
}

/** Builds the media parts; `usage` records transcription and speech like model calls. */
export function createMediaParts(ctx: CoreContext, usage?: UsageSink): MediaParts {
  const guard = new BudgetGuard({
    db: ctx.db,
    config: () => ctx.config(),
    now: () => ctx.clock.now(),
    log: (fields, msg) => ctx.logger.warn({ module: "budgets", ...fields }, msg),
  });
  // A voice note is paid by the chat it came from, like the turn it starts.
  const budget: MediaBudget = (scope, usd) =>
    guard.check(
      {
        agentId: scope.agentId ?? ctx.config().agents.default,
        channel: scope.channel ?? "media",
        sessionKey: scope.sessionKey ?? null,
      },
      { usd, tokens: 0 },
    )?.notice;
  return {
    audio: new AudioClient({
      config: () => ctx.config(),
      now: () => ctx.clock.now(),
      ...(usage ? { usage, budget } : {}),
    }),
    voicePrefs: new VoicePrefs(ctx.db, () => ctx.clock.now()),
  };
}
