/**
 * Downloads of a platform's file URL (Telegram's file endpoint, Discord's CDN) with a byte limit
 * enforced while reading: an announced `content-length` over the limit is refused before the body,
 * and a body that grows past it is cut off, so a lying server never fills the memory.
 */
import { MediaFailure, mb } from "./media-errors.js";

/** Options of {@link downloadLimited}. */
export interface DownloadOptions {
  /** Platform name for the error message ("Discord", "Telegram"). */
  source: string;
  /** Aborts the download (channel shutdown). */
  signal?: AbortSignal;
}

/** The error for a file over `maxBytes`; `size` is what is known of it. */
export function tooLarge(size: number, maxBytes: number, what = "file"): MediaFailure {
  return new MediaFailure(
    "MEDIA_TOO_LARGE",
    `The ${what} is too large (${mb(size)}; the limit is ${mb(maxBytes)}).`,
  );
}

/**
 * GETs `url` and returns its bytes, refusing more than `maxBytes` (`MEDIA_TOO_LARGE`) and a failed
 * response (`MEDIA_PROVIDER_FAILED`); both messages are safe to show the user.
 */
export async function downloadLimited(url: string, maxBytes: number, opts: DownloadOptions): Promise<Buffer> {
  const ctl = new AbortController();
  const onAbort = (): void => ctl.abort(opts.signal?.reason);
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const res = await fetch(url, { signal: ctl.signal });
    if (!res.ok)
      throw new MediaFailure(
        "MEDIA_PROVIDER_FAILED",
        `Downloading the file from ${opts.source} failed (${res.status}).`,
      );
    const announced = Number(res.headers.get("content-length") ?? NaN);
    if (Number.isFinite(announced) && announced > maxBytes) {
      ctl.abort();
      throw tooLarge(announced, maxBytes);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    const reader = res.body?.getReader();
    for (;;) {
      const next = await reader?.read();
      if (!next || next.done) break;
      total += next.value.byteLength;
      if (total > maxBytes) {
        // Stop reading: the rest of the body is never fetched.
        ctl.abort();
        throw tooLarge(total, maxBytes);
      }
      chunks.push(Buffer.from(next.value));
    }
    return Buffer.concat(chunks, total);
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
  }
}
