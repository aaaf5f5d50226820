/**
 * All attachments of one message, in order, into one user turn: voice and audio become transcripts,
 * text files and PDFs their text (both appended to the caption in order), images the model can see
 * become image input, anything else is named. Every attachment is handled on its own: a refused one
 * (over a limit, transcription off, a failed download) gets its reply line and a note for the model,
 * and the others still go through. All of them share one {@link MediaBudget}, so the limits of
 * `media.*` and the channel's image limit bound the whole message.
 */
import type { ImageInput } from "../core/host.js";
import type { MediaCallScope } from "./audio-client.js";
import { imageInput, modelImageMime } from "./images.js";
import {
  attachmentMessage,
  checkBudget,
  messageBudget,
  type IncomingAttachment,
  type InboundMediaDeps,
} from "./inbound-media.js";
import { MediaFailure } from "./media-errors.js";

/** Options of {@link attachmentsMessage}. */
export interface BatchOptions {
  /** The channel's image limit (`channels.<name>.media.max_image_bytes`), per image and per message. */
  maxImageBytes: number;
  /** Called with an unexpected failure (not a user-facing MediaFailure) before it becomes a reply. */
  onError?: (err: Error, name: string) => void;
}

/** What a message's attachments came to. */
export interface BatchResult {
  /** The caption, then each attachment's text or note, in order. */
  text: string;
  /** Images for the model, in order. */
  images: ImageInput[];
  /** Lines for the chat: refusals (and, when there is nothing to answer, what cannot be opened). */
  replies: string[];
  /** False when neither the caption nor any attachment left anything for the model: no turn. */
  hasContent: boolean;
}

/** What the channel says it can read, for the reply to a message of files it cannot open. */
const CAN_READ = "I can read text, voice messages, audio, images, text files and PDFs here";

/** Turns a message's caption and attachments into one turn's text and images, plus replies. */
export async function attachmentsMessage(
  atts: readonly IncomingAttachment[],
  caption: string,
  deps: InboundMediaDeps,
  scope: MediaCallScope,
  opts: BatchOptions,
): Promise<BatchResult> {
  const budget = messageBudget(deps.config(), opts.maxImageBytes);
  const parts: string[] = [caption];
  const images: ImageInput[] = [];
  const replies: string[] = [];
  const unopened: string[] = [];
  let read = false;
  const refuse = (att: IncomingAttachment, why: string): void => {
    // With several files the reply says which one it is about.
    replies.push(atts.length > 1 ? `"${att.name}": ${why}` : why);
    parts.push(`[The user also attached "${att.name}", which was not read: ${why}]`);
  };
  for (const att of atts) {
    try {
      const mime = att.kind === "document" ? modelImageMime(att.name, att.mime) : undefined;
      if (mime) {
        images.push(await budgetedImage(att, mime, budget, opts.maxImageBytes));
        read = true;
        continue;
      }
      const out = await attachmentMessage(att, "", deps, scope, budget);
      if (!out) {
        unopened.push(att.name);
        parts.push(`[The user also attached "${att.name}", which I cannot open]`);
      } else if ("reply" in out) refuse(att, out.reply);
      else {
        parts.push(out.text);
        read = true;
      }
    } catch (err) {
      if (err instanceof MediaFailure) refuse(att, err.message);
      else {
        opts.onError?.(err as Error, att.name);
        refuse(att, "I could not fetch or read this file.");
      }
    }
  }
  const hasContent = read || caption.trim() !== "";
  if (!hasContent && unopened.length)
    replies.push(`${CAN_READ}, but not ${unopened.map((n) => `"${n}"`).join(", ")}.`);
  return { text: parts.filter((p) => p.trim()).join("\n\n"), images, replies, hasContent };
}

/** An image within its own limit and what is left of the message's image budget. */
async function budgetedImage(
  att: IncomingAttachment,
  mime: string,
  budget: { imageBytes: number },
  maxImageBytes: number,
): Promise<ImageInput> {
  // Its own limit first (the clearer reply), then the message's.
  if (att.size === undefined || att.size <= maxImageBytes)
    checkBudget(att.size, budget.imageBytes, maxImageBytes, "images");
  const img = await imageInput(
    { mime, ...(att.size !== undefined ? { size: att.size } : {}), download: (max) => att.download(max) },
    maxImageBytes,
  );
  // base64 is 4/3 of the bytes: count what was downloaded.
  const bytes = Buffer.byteLength(img.data, "base64");
  checkBudget(bytes, budget.imageBytes, maxImageBytes, "images");
  budget.imageBytes -= bytes;
  return img;
}
