/**
 * Images in, for every chat channel: JPEG, PNG, WebP and GIF (what vision models accept) go to the
 * model as image input, base64, within the channel's `media.max_image_bytes`. Checked against the
 * platform's announced size before any download, and against the bytes actually received.
 */
import { extname } from "node:path";
import type { ImageInput } from "../core/host.js";
import { tooLarge } from "./download.js";

const MODEL_IMAGE_MIME = /^image\/(jpeg|png|webp|gif)$/;
const BY_EXT: Record<string, string> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  gif: "image/gif",
};

/**
 * The MIME type to send the model when a file is an image it can see, else undefined. The
 * platform's type wins; the extension is the fallback when no type was given.
 */
export function modelImageMime(name: string, mime?: string): string | undefined {
  const m = mime?.split(";")[0]?.trim().toLowerCase();
  if (m) return MODEL_IMAGE_MIME.test(m) ? m : undefined;
  return BY_EXT[extname(name).slice(1).toLowerCase()];
}

/** An image before download. */
export interface IncomingImage {
  mime: string;
  /** Size the platform announces. */
  size?: number;
  /** Downloads at most `maxBytes` (rejects above it). */
  download(maxBytes: number): Promise<Buffer>;
}

/**
 * Downloads an image as model input, refusing one over `maxBytes` (`MEDIA_TOO_LARGE`, "The image
 * is too large ...") before the download when its size is announced.
 */
export async function imageInput(img: IncomingImage, maxBytes: number): Promise<ImageInput> {
  if (img.size !== undefined && img.size > maxBytes) throw tooLarge(img.size, maxBytes, "image");
  const buf = await img.download(maxBytes);
  if (buf.length > maxBytes) throw tooLarge(buf.length, maxBytes, "image");
  return { mime: img.mime, data: buf.toString("base64") };
}
