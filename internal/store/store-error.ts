/** The store's typed error. */

/**
 * Store errors separate "disk full / read-only" (the user must act) from other failures;
 * STORE_NEWER is a database written by a newer build, which this one refuses to open.
 */
export class StoreError extends Error {
  constructor(
    readonly code:
      "STORE_FULL" | "STORE_READONLY" | "STORE_BUSY" | "STORE_MIGRATION" | "STORE_NEWER" | "STORE_ERROR",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StoreError";
  }
}
