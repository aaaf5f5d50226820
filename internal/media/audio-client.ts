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
    kind: "transcription" | "speech";
    /** Audio seconds (per-minute price) or characters spoken (per-character price). */
    seconds?: number;
    chars?: number;
    /** `media.*.price_per_*` when the owner set one: wins over `models.pricing` and the shipped table. */
    price?: { input: number; output: number; per_minute?: number; per_million_chars?: number };
    channel?: string | null;
    payerAgent?: string | null;
    payerSession?: string | null;
    at: number;
  }): unknown;
  /** The ledger figure of a call before it is made (for the budget check). */
  price?(input: Parameters<UsageSink["record"]>[0]): { cost: number };
}

/**
 * The budget check before a call whose cost is known in advance (a transcription of known length):
 * the notice of the limit it would cross, or undefined. internal/budgets' guard, narrowed.
 */
export type MediaBudget = (scope: MediaCallScope, usd: number) => string | undefined;

/** Who the call is for, for the usage record. */
export interface MediaCallScope {
  sessionKey?: string;
  agentId?: string;
  /** The chat channel (telegram, discord): who pays, for channel budgets. */
  channel?: string;
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
  budget?: MediaBudget;
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
    const price =
      cfg.price_per_minute !== undefined
        ? { input: 0, output: 0, per_minute: cfg.price_per_minute }
        : undefined;
    // A clip of known length costs a known amount: refused before the call when it would cross a cap.
    if (this.deps.budget && audio.durationS !== undefined) {
      const usd =
        this.deps.usage?.price?.(
          this.entry(cfg.provider, cfg.model, scope, "transcription", 0, 0, {
            seconds: audio.durationS,
            ...(price ? { price } : {}),
          }),
        ).cost ?? 0;
      const refused = this.deps.budget(scope, usd);
      if (refused) throw new MediaFailure("MEDIA_BUDGET", refused);
    }
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
      this.record(
        this.entry(cfg.provider, cfg.model, scope, "transcription", input, output, {
          ...(seconds !== undefined ? { seconds } : {}),
          ...(price ? { price } : {}),
        }),
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
      // Speech is billed per character: the characters are the "input tokens" and the units of the row.
      const price =
        cfg.price_per_million_chars !== undefined
          ? { input: 0, output: 0, per_million_chars: cfg.price_per_million_chars }
          : undefined;
      this.record(
        this.entry(cfg.provider, cfg.model, scope, "speech", 0, 0, {
          chars: input.length,
          ...(price ? { price } : {}),
        }),
      );
      return buf;
    } catch (err) {
      throw providerFailed("speech", cfg.provider, err);
    }
  }

  private entry(
    provider: string,
    model: string,
    scope: MediaCallScope,
    kind: "transcription" | "speech",
    input: number,
    output: number,
    extra: Pick<Parameters<UsageSink["record"]>[0], "seconds" | "chars" | "price">,
  ): Parameters<UsageSink["record"]>[0] {
    return {
      provider,
      model,
      ...(scope.sessionKey ? { sessionKey: scope.sessionKey } : {}),
      ...(scope.agentId ? { agentId: scope.agentId } : {}),
      usage: { ...ZERO_USAGE, input, output, total: input + output },
      kind,
      ...extra,
      channel: scope.channel ?? null,
      payerAgent: scope.agentId ?? null,
      payerSession: scope.sessionKey ?? null,
      at: this.deps.now(),
    };
  }

  private record(entry: Parameters<UsageSink["record"]>[0]): void {
    try {
      this.deps.usage?.record(entry);
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
