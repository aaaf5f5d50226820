/** Errors of the media module; `message` is written for the person in the chat (or the model). */

/** Why a media operation failed. */
export type MediaErrorCode =
  | "MEDIA_NOT_CONFIGURED"
  | "MEDIA_TOO_LARGE"
  | "MEDIA_UNSUPPORTED"
  | "MEDIA_PROVIDER_FAILED"
  | "MEDIA_EXTRACT_FAILED"
  | "MEDIA_SAVE_REFUSED"
  | "MEDIA_BUDGET";

/** A media failure whose message is safe to show the user. */
export class MediaFailure extends Error {
  constructor(
    readonly code: MediaErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "MediaFailure";
  }
}

/** `12.3 MB`: sizes in replies. */
export function mb(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
