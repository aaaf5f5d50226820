/**
 * `media`: voice notes in (speech to text), voice replies out (text to speech) and documents in.
 * Transcription and speech are off until a provider is named: they call the owner's own
 * OpenAI-compatible endpoint (`/v1/audio/transcriptions`, `/v1/audio/speech`) from `models.providers`.
 */
import { z } from "zod";

const MB = 1024 * 1024;

export const mediaSchema = z
  .object({
    transcription: z
      .object({
        /** A key of `models.providers`; unset = voice notes are answered with what to configure. */
        provider: z.string().min(1).optional(),
        model: z.string().min(1).default("whisper-1"),
        /** ISO-639-1 hint such as `en` or `de`; better accuracy and speed when known. */
        language: z
          .string()
          .regex(/^[a-z]{2,3}$/, { error: "expected an ISO-639-1 code such as en or de" })
          .optional(),
        /** Longer audio is refused with a reply before any transcription call (OpenAI's limit: 25 MB). */
        max_bytes: z
          .number()
          .int()
          .positive()
          .default(20 * MB),
        /** USD per audio minute, for the usage record (unset = unpriced). */
        price_per_minute: z.number().min(0).optional(),
      })
      .strict()
      .prefault({}),
    speech: z
      .object({
        /** A key of `models.providers`; unset = `/voice on` answers with what to configure. */
        provider: z.string().min(1).optional(),
        model: z.string().min(1).default("tts-1"),
        voice: z.string().min(1).default("alloy"),
        /** Text longer than this is spoken up to here (the whole text is still the caption/reply). */
        max_chars: z.number().int().min(1).max(4096).default(4000),
        /** USD per 1M characters, for the usage record (unset = unpriced). */
        price_per_million_chars: z.number().min(0).optional(),
      })
      .strict()
      .prefault({}),
    documents: z
      .object({
        /** Text files and PDFs up to this size become content the model reads. */
        max_bytes: z
          .number()
          .int()
          .positive()
          .default(10 * MB),
        /** Extracted text beyond this many characters is cut (the file stays whole in the workspace). */
        max_chars: z.number().int().min(1000).default(60_000),
        /** A PDF is read in a child process killed after this many seconds (the chat is told). */
        parse_timeout_s: z.number().int().min(1).max(600).default(30),
        /** ...or once it holds more than this much memory (resident, MB). */
        parse_memory_mb: z.number().int().min(64).max(4096).default(256),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

export type MediaConfig = z.infer<typeof mediaSchema>;

/** Problems of `media.*.provider` naming a provider that is not in `models.providers`. */
export function mediaProviderProblems(
  media: MediaConfig,
  providers: Record<string, unknown>,
): { path: (string | number)[]; message: string }[] {
  const known = Object.keys(providers);
  const out: { path: (string | number)[]; message: string }[] = [];
  for (const part of ["transcription", "speech"] as const) {
    const name = media[part].provider;
    if (name === undefined || name in providers) continue;
    out.push({
      path: ["media", part, "provider"],
      message: `expected a provider configured under models.providers (${known.length ? known.join(", ") : "none configured"}), got "${name}"`,
    });
  }
  return out;
}
