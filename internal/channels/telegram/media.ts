/**
 * Inbound media: photos and image documents become image input for the model (size-limited);
 * other files (voice, video, audio, documents) are saved to the workspace when `media.save` is on,
 * otherwise the user is told they are not supported yet.
 */
import { reportRefusal } from "../../workspace/refusal-log.js";
import { isWorkspaceError } from "../../workspace/workspace-error.js";
import { writeNewWorkspaceFile } from "../../workspace/workspace-door.js";
import type { Api } from "grammy";
import type { Message } from "grammy/types";
import type { ImageInput } from "../../core/host.js";
import { downloadLimited } from "../../media/download.js";
import { imageInput, modelImageMime } from "../../media/images.js";
import { mb } from "../../media/media-errors.js";

export interface MediaDeps {
  api: Api;
  apiRoot: string;
  token: string;
  maxImageBytes: number;
  /** Aborts downloads on shutdown. */
  signal?: AbortSignal;
}

/** What a message carries besides text. */
export type MediaKind =
  | { kind: "none" }
  | { kind: "image"; fileId: string; mime: string; size?: number }
  | {
      kind: "file";
      label: string;
      fileId: string;
      fileUniqueId: string;
      name: string;
      mime?: string;
      size?: number;
      /** What the media module makes of it (transcript, document text) or `other` (saved only). */
      role: "voice" | "audio" | "document" | "other";
      durationS?: number;
    };

/** Classifies a message's attachment. */
export function mediaOf(m: Message): MediaKind {
  if (m.photo && m.photo.length > 0) {
    // The largest size comes last.
    const p = m.photo[m.photo.length - 1];
    if (p)
      return {
        kind: "image",
        fileId: p.file_id,
        mime: "image/jpeg",
        ...(p.file_size ? { size: p.file_size } : {}),
      };
  }
  const d = m.document;
  const docImage = d?.mime_type ? modelImageMime(d.file_name ?? "", d.mime_type) : undefined;
  if (d && docImage)
    return {
      kind: "image",
      fileId: d.file_id,
      mime: docImage,
      ...(d.file_size ? { size: d.file_size } : {}),
    };
  const file = (
    label: string,
    f: {
      file_id: string;
      file_unique_id: string;
      file_size?: number;
      mime_type?: string;
      file_name?: string;
      duration?: number;
    },
    ext: string,
    role: "voice" | "audio" | "document" | "other" = "other",
  ): MediaKind => ({
    kind: "file",
    label,
    fileId: f.file_id,
    fileUniqueId: f.file_unique_id,
    name: f.file_name ?? `${f.file_unique_id}${ext}`,
    ...(f.mime_type ? { mime: f.mime_type } : {}),
    ...(f.file_size ? { size: f.file_size } : {}),
    role,
    ...(f.duration !== undefined ? { durationS: f.duration } : {}),
  });
  if (m.voice) return file("Voice messages", m.voice, ".ogg", "voice");
  if (m.audio) return file("Audio files", m.audio, ".mp3", "audio");
  if (m.video) return file("Videos", m.video, ".mp4");
  if (m.video_note) return file("Video messages", { ...m.video_note }, ".mp4");
  if (d) return file("Files of this type", d, "", "document");
  if (m.sticker)
    return {
      kind: "file",
      label: "Stickers",
      fileId: m.sticker.file_id,
      fileUniqueId: m.sticker.file_unique_id,
      name: `${m.sticker.file_unique_id}.webp`,
      role: "other",
    };
  return { kind: "none" };
}

/** Error for media that could not be fetched; `message` is safe to show the user. */
export class MediaError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MediaError";
  }
}

/** Downloads a file by id, refusing anything above `maxBytes`. */
export async function download(deps: MediaDeps, fileId: string, maxBytes: number): Promise<Buffer> {
  const f = await deps.api.getFile(fileId);
  if (f.file_size !== undefined && f.file_size > maxBytes)
    throw new MediaError(`The file is too large (${mb(f.file_size)}; the limit is ${mb(maxBytes)}).`);
  if (!f.file_path) throw new MediaError("Telegram did not provide the file for download.");
  const url = `${deps.apiRoot.replace(/\/$/, "")}/file/bot${deps.token}/${f.file_path}`;
  return downloadLimited(url, maxBytes, {
    source: "Telegram",
    ...(deps.signal ? { signal: deps.signal } : {}),
  });
}

/** Downloads an image as model input (the limits are the shared ones of internal/media/images). */
export function fetchImage(
  deps: MediaDeps,
  media: Extract<MediaKind, { kind: "image" }>,
): Promise<ImageInput> {
  return imageInput(
    {
      mime: media.mime,
      ...(media.size !== undefined ? { size: media.size } : {}),
      download: (max) => download(deps, media.fileId, max),
    },
    deps.maxImageBytes,
  );
}

/** Saves a file to `<workspace>/inbox/telegram/<date>/`; returns the workspace-relative path. */
export async function saveFile(
  deps: MediaDeps,
  workspace: string,
  media: Extract<MediaKind, { kind: "file" }>,
  now: number,
  maxBytes = 50 * 1024 * 1024,
): Promise<string> {
  const buf = await download(deps, media.fileId, maxBytes);
  const day = new Date(now).toISOString().slice(0, 10);
  const safe = media.name.replace(/[^\w.-]+/g, "_").slice(-100) || media.fileUniqueId;
  const id = media.fileUniqueId.replace(/[^\w-]+/g, "_").slice(0, 64);
  const rel = `inbox/telegram/${day}/${id}-${safe}`;
  // Through the workspace door: a link anywhere on the way (today's folder -> ~/.config/autostart) is
  // refused, never written through.
  try {
    await writeNewWorkspaceFile(workspace, rel, buf);
  } catch (err) {
    if (!isWorkspaceError(err)) throw err;
    reportRefusal(err, "media inbox");
    throw new MediaError(
      `I could not save that file in the workspace inbox: ${err.message}. The owner should remove it.`,
      { cause: err },
    );
  }
  return rel;
}
