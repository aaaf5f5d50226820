/**
 * Attachments in, for every chat channel: a voice note or audio file becomes its transcript, a text
 * file or PDF becomes its text; either way the user message says what it was and where the file was
 * saved in the workspace, so tools can open it. Refusals (off, too long, unreadable) come back as a
 * reply for the chat: a file is never dropped without a word, and an over-limit recording is refused
 * before any download or transcription call.
 */
import { reportRefusal } from "../workspace/refusal-log.js";
import { isWorkspaceError } from "../workspace/workspace-error.js";
import { writeNewWorkspaceFile } from "../workspace/workspace-door.js";
import type { Config } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import type { AudioClient, MediaCallScope } from "./audio-client.js";
import { checkAudioSize } from "./audio-client.js";
import { documentKind, documentMessage, extractDocument, voiceMessage } from "./documents.js";
import { MediaFailure, mb } from "./media-errors.js";

/** A platform attachment, before download. */
export interface IncomingAttachment {
  /** `voice` = a voice note / voice message; `audio` = an audio file; `document` = any other file. */
  kind: "voice" | "audio" | "document";
  name: string;
  /** A stable unique id for the saved file name. */
  uniqueId: string;
  mime?: string;
  /** Size the platform announces (checked before downloading). */
  size?: number;
  durationS?: number;
  /** Downloads at most `maxBytes` (rejects above it). */
  download(maxBytes: number): Promise<Buffer>;
}

export interface InboundMediaDeps {
  config: () => Config;
  audio: AudioClient;
  clock: Clock;
  /** Channel id, the folder under `inbox/`. */
  channel: string;
  /** Shows "typing..." in the chat (repeated while the transcription runs). */
  typing: () => void;
}

/**
 * What one message may still use, shared by all of its attachments so ten big files cannot flood
 * the prompt or the bill: each limit of `media.*` (and the channel's image limit) bounds the whole
 * message, not only each file. Consumed as attachments are read, in order.
 */
export interface MediaBudget {
  /** Audio bytes left to transcribe (`media.transcription.max_bytes`). */
  audioBytes: number;
  /** Document bytes left to read (`media.documents.max_bytes`). */
  documentBytes: number;
  /** Characters of document text left for the prompt (`media.documents.max_chars`). */
  documentChars: number;
  /** Image bytes left to pass to the model (the channel's `media.max_image_bytes`). */
  imageBytes: number;
}

/** A fresh budget for one message. */
export function messageBudget(cfg: Config, maxImageBytes: number): MediaBudget {
  return {
    audioBytes: cfg.media.transcription.max_bytes,
    documentBytes: cfg.media.documents.max_bytes,
    documentChars: cfg.media.documents.max_chars,
    imageBytes: maxImageBytes,
  };
}

/** Refuses a file the message's remaining budget cannot take (after its own limit passed). */
export function checkBudget(size: number | undefined, left: number, limit: number, what: string): void {
  if (size !== undefined && size > left)
    throw new MediaFailure(
      "MEDIA_TOO_LARGE",
      `Not read: with the other files of this message it is over the ${mb(limit)} limit for ${what} in one message.`,
    );
}

/** The message text to submit, or a reply that ends the matter. */
export type InboundMediaResult = { text: string } | { reply: string };

/** Typing actions last ~5 s on both platforms. */
const TYPING_EVERY_MS = 4000;

/**
 * Turns an attachment into the user's message. `undefined` = not ours (an unsupported document
 * kind: the caller keeps its old behaviour, e.g. saving it when `media.save` is on). `budget` is
 * what the message may still use (several attachments share it); by default the whole of `media.*`.
 */
export async function attachmentMessage(
  att: IncomingAttachment,
  caption: string,
  deps: InboundMediaDeps,
  scope: MediaCallScope,
  budget?: MediaBudget,
): Promise<InboundMediaResult | undefined> {
  const cfg = deps.config();
  const left = budget ?? messageBudget(cfg, Infinity);
  try {
    if (att.kind === "voice" || att.kind === "audio") {
      if (!deps.audio.transcriptionEnabled())
        return {
          reply:
            "I can't listen to voice messages yet: the owner needs to set media.transcription.provider in config.yaml.",
        };
      checkAudioSize(att.size, cfg);
      const audioLimit = cfg.media.transcription.max_bytes;
      checkBudget(att.size, left.audioBytes, audioLimit, "audio");
      const data = await att.download(audioLimit);
      checkAudioSize(data.length, cfg);
      checkBudget(data.length, left.audioBytes, audioLimit, "audio");
      left.audioBytes -= data.length;
      const rel = await saveToInbox(cfg.workspace, deps.channel, att, data, deps.clock.now());
      const transcript = await whileTyping(deps, () =>
        deps.audio.transcribe(
          {
            data,
            name: att.name,
            ...(att.mime ? { mime: att.mime } : {}),
            ...(att.durationS !== undefined ? { durationS: att.durationS } : {}),
          },
          scope,
        ),
      );
      return { text: voiceMessage(caption, transcript, rel) };
    }
    if (documentKind(att.name, att.mime) === "other") return undefined;
    const limits = {
      maxBytes: cfg.media.documents.max_bytes,
      maxChars: cfg.media.documents.max_chars,
      parseTimeoutMs: cfg.media.documents.parse_timeout_s * 1000,
      parseMemoryMb: cfg.media.documents.parse_memory_mb,
    };
    if (att.size !== undefined && att.size > limits.maxBytes)
      return {
        reply: `The document is too large to read (${mb(att.size)}; the limit is ${mb(limits.maxBytes)}).`,
      };
    checkBudget(att.size, left.documentBytes, limits.maxBytes, "documents");
    const data = await att.download(limits.maxBytes);
    checkBudget(data.length, left.documentBytes, limits.maxBytes, "documents");
    left.documentBytes -= data.length;
    // The text of all documents of a message together stays within max_chars.
    const doc = await extractDocument(data, att.name, att.mime, {
      ...limits,
      maxChars: Math.min(limits.maxChars, left.documentChars),
    });
    left.documentChars -= doc.text.length;
    const rel = await saveToInbox(cfg.workspace, deps.channel, att, data, deps.clock.now());
    return { text: documentMessage(caption, rel, att.name, doc) };
  } catch (err) {
    if (err instanceof MediaFailure) return { reply: err.message };
    // Download failures from the platform carry a user-safe message too (Telegram's MediaError).
    if ((err as Error).name === "MediaError") return { reply: (err as Error).message };
    throw err;
  }
}

async function whileTyping<T>(deps: InboundMediaDeps, fn: () => Promise<T>): Promise<T> {
  let timer: ReturnType<Clock["setTimeout"]> | undefined;
  let done = false;
  const tick = (): void => {
    if (done) return;
    deps.typing();
    timer = deps.clock.setTimeout(tick, TYPING_EVERY_MS);
    timer.unref?.();
  };
  tick();
  try {
    return await fn();
  } finally {
    done = true;
    if (timer) deps.clock.clearTimeout(timer);
  }
}

/**
 * Saves to `<workspace>/inbox/<channel>/<date>/<id>-<name>`; returns the workspace-relative path.
 * Through the workspace door: `inbox/`, the channel or the day folder replaced by a link (to
 * `~/.config/autostart`) is refused, never written through (the caller reports the failure).
 */
export async function saveToInbox(
  workspace: string,
  channel: string,
  att: Pick<IncomingAttachment, "name" | "uniqueId">,
  data: Buffer,
  now: number,
): Promise<string> {
  const day = new Date(now).toISOString().slice(0, 10);
  const safeId = att.uniqueId.replace(/[^\w-]+/g, "_").slice(0, 64);
  const safe = att.name.replace(/[^\w.-]+/g, "_").slice(-100) || "file";
  const safeChannel = channel.replace(/[^\w-]+/g, "_") || "channel";
  const rel = `inbox/${safeChannel}/${day}/${safeId}-${safe}`;
  try {
    await writeNewWorkspaceFile(workspace, rel, data);
  } catch (err) {
    if (!isWorkspaceError(err)) throw err;
    reportRefusal(err, "media inbox");
    throw new MediaFailure(
      "MEDIA_SAVE_REFUSED",
      `I could not save that file in the workspace inbox: ${err.message}. The owner should remove it.`,
      { cause: err },
    );
  }
  return rel;
}
