/**
 * Speech to text and text to speech through the owner's OpenAI-compatible provider
 * (`/v1/audio/transcriptions`, `/v1/audio/speech`), with usage and cost recorded like model calls.
 * The openai SDK loads on the first call, so a daemon that never hears a voice note pays nothing.
 */
import type { Config } from "../config/schema.js";
import { ZERO_USAGE, type Usage } from "../core/usage.js";
import { MediaFailure, mb } from "./media-errors.js";

/**
 * Where usage goes (the UsageTracker). A narrow local shape of its `record` input, so media never
 * imports the agent layer above it.
 */
export interface UsageSink {
  record(input: {
    provider: string;
    model: string;
    sessionKey?: string;
    agentId?: string;
    usage: Usage;
    cost: number | null;
    at: number;
  }): unknown;
}

/** Who the call is for, for the usage record. */
export interface MediaCallScope {
  sessionKey?: string;
  agentId?: string;
}

/** One audio clip to transcribe. */
export interface AudioInput {
  data: Buffer;
  /** File name with an extension the endpoint recognises (`voice.ogg`). */
  name: string;
  mime?: string;
  /** Length in seconds when the platform says (priced per minute). */
  durationS?: number;
}

export interface AudioClientDeps {
  config: () => Config;
  usage?: UsageSink;
  now: () => number;
}

type OpenAIClient = InstanceType<(typeof import("openai"))["default"]>;
let sdk: Promise<typeof import("openai")> | undefined;
const loadSdk = (): Promise<typeof import("openai")> => (sdk ??= import("openai"));

/** The transcription and speech client. */
export class AudioClient {
  private clients = new Map<string, { fingerprint: string; client: OpenAIClient }>();

  constructor(private deps: AudioClientDeps) {}

  /** True when `media.transcription.provider` is set. */
  transcriptionEnabled(): boolean {
    return this.deps.config().media.transcription.provider !== undefined;
  }

  /** True when `media.speech.provider` is set. */
  speechEnabled(): boolean {
    return this.deps.config().media.speech.provider !== undefined;
  }

  /** Transcribes a clip. Over-limit audio is refused before any call. */
  async transcribe(audio: AudioInput, scope: MediaCallScope = {}, signal?: AbortSignal): Promise<string> {
    const cfg = this.deps.config().media.transcription;
    if (!cfg.provider)
      throw new MediaFailure(
        "MEDIA_NOT_CONFIGURED",
        "Voice messages are off: set media.transcription.provider in config.yaml to have them transcribed.",
      );
    if (audio.data.length > cfg.max_bytes) throw tooLong(audio.data.length, cfg.max_bytes);
    const client = await this.client(cfg.provider);
    const { toFile } = await loadSdk();
    try {
      const res = await client.audio.transcriptions.create(
        {
          file: await toFile(audio.data, audio.name, audio.mime ? { type: audio.mime } : {}),
          model: cfg.model,
          response_format: "json",
          ...(cfg.language ? { language: cfg.language } : {}),
        },
        signal ? { signal } : {},
      );
      const u = (res as { usage?: UsageShape }).usage;
      const seconds = u?.type === "duration" ? u.seconds : audio.durationS;
      const input = u?.type === "tokens" ? (u.input_tokens ?? 0) : 0;
      const output = u?.type === "tokens" ? (u.output_tokens ?? 0) : 0;
      this.record(cfg.provider, cfg.model, scope, input, output, () =>
        cfg.price_per_minute !== undefined && seconds !== undefined
          ? (cfg.price_per_minute * seconds) / 60
          : null,
      );
      return res.text.trim();
    } catch (err) {
      throw providerFailed("transcription", cfg.provider, err);
    }
  }

  /** Speaks `text` as OGG/Opus (a Telegram voice note; plays in Discord too). */
  async speak(text: string, scope: MediaCallScope = {}, signal?: AbortSignal): Promise<Buffer> {
    const cfg = this.deps.config().media.speech;
    if (!cfg.provider)
      throw new MediaFailure(
        "MEDIA_NOT_CONFIGURED",
        "Voice replies are off: set media.speech.provider in config.yaml first.",
      );
    const input = text.slice(0, cfg.max_chars);
    const client = await this.client(cfg.provider);
    try {
      const res = await client.audio.speech.create(
        { model: cfg.model, voice: cfg.voice, input, response_format: "opus" },
        signal ? { signal } : {},
      );
      const buf = Buffer.from(await res.arrayBuffer());
      // Speech is billed per character: the characters are the "input tokens" of the record.
      this.record(cfg.provider, cfg.model, scope, input.length, 0, () =>
        cfg.price_per_million_chars !== undefined
          ? (cfg.price_per_million_chars * input.length) / 1_000_000
          : null,
      );
      return buf;
    } catch (err) {
      throw providerFailed("speech", cfg.provider, err);
    }
  }

  private record(
    provider: string,
    model: string,
    scope: MediaCallScope,
    input: number,
    output: number,
    cost: () => number | null,
  ): void {
    try {
      this.deps.usage?.record({
        provider,
        model,
        ...(scope.sessionKey ? { sessionKey: scope.sessionKey } : {}),
        ...(scope.agentId ? { agentId: scope.agentId } : {}),
        usage: { ...ZERO_USAGE, input, output, total: input + output },
        cost: cost(),
        at: this.deps.now(),
      });
    } catch {
      /* a full disk loses the record, never the voice note */
    }
  }

  /** One SDK client per provider, rebuilt when its settings change (hot reload). */
  private async client(name: string): Promise<OpenAIClient> {
    const cfg = this.deps.config();
    const p = cfg.models.providers[name];
    if (!p)
      throw new MediaFailure(
        "MEDIA_NOT_CONFIGURED",
        `media names provider "${name}", which is not in models.providers.`,
      );
    const timeout = (p.timeout_s ?? cfg.models.timeout_s) * 1000;
    const fingerprint = JSON.stringify([p.base_url, p.api_key, p.headers, timeout, cfg.models.max_retries]);
    const have = this.clients.get(name);
    if (have?.fingerprint === fingerprint) return have.client;
    const { default: OpenAI } = await loadSdk();
    const client = new OpenAI({
      baseURL: p.base_url,
      // Never OPENAI_API_KEY from the environment behind the config's back.
      apiKey: p.api_key ?? "no-key",
      defaultHeaders: p.headers,
      maxRetries: cfg.models.max_retries,
      timeout,
      logLevel: "off",
    });
    this.clients.set(name, { fingerprint, client });
    return client;
  }
}

type UsageShape =
  { type: "duration"; seconds: number } | { type: "tokens"; input_tokens?: number; output_tokens?: number };

function tooLong(size: number, max: number): MediaFailure {
  return new MediaFailure(
    "MEDIA_TOO_LARGE",
    `That recording is too long to transcribe (${mb(size)}; the limit is ${mb(max)}). Please send a shorter one.`,
  );
}

function providerFailed(what: string, provider: string, err: unknown): MediaFailure {
  if (err instanceof MediaFailure) return err;
  const status = (err as { status?: number }).status;
  return new MediaFailure(
    "MEDIA_PROVIDER_FAILED",
    `The ${what} service (${provider}) failed${status ? ` (${status})` : ""}: ${(err as Error).message}`,
    { cause: err },
  );
}

/** The size check alone, for callers that know the size before downloading. */
export function checkAudioSize(size: number | undefined, config: Config): void {
  const max = config.media.transcription.max_bytes;
  if (size !== undefined && size > max) throw tooLong(size, max);
}
