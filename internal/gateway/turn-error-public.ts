/**
 * What an API client (not the owner in a chat) may see of a failed turn (issue 34): the message
 * without the upstream provider's base URL, host or port (the owner's infrastructure is not the
 * caller's business; issue 46 item 6), and the upstream's `Retry-After` passed on, so an SDK waits as long as the model asked.
 */
import type { TurnResult } from "../core/host.js";
import { HttpError } from "./http-util.js";
import { withoutAddresses } from "../core/public-text.js";

/** The message without the provider's URL, host, address or port (core/public-text.ts). */
export function publicTurnMessage(message: string): string {
  return withoutAddresses(message);
}

/** `Retry-After` (whole seconds, at least 1) when the upstream said how long to wait. */
export function retryAfterHeader(r: TurnResult): Record<string, string> {
  const ms = r.error?.retryAfterMs;
  return ms !== undefined && Number.isFinite(ms) && ms >= 0
    ? { "retry-after": String(Math.max(1, Math.ceil(ms / 1000))) }
    : {};
}

/** Maps a failed turn to the HTTP error an OpenAI client expects. */
export function turnError(r: TurnResult): HttpError {
  const code = r.error?.code ?? "turn_failed";
  const message = publicTurnMessage(r.error?.message ?? r.text ?? "the turn failed");
  const retry = retryAfterHeader(r);
  if (code === "AGENT_UNKNOWN") return new HttpError(404, "model_not_found", message, {}, "model");
  if (code === "MODEL_RATE_LIMIT") return new HttpError(429, "rate_limit_exceeded", message, retry);
  if (code === "MODEL_NOT_CONFIGURED") return new HttpError(503, "model_not_configured", message);
  // Disk full / read-only store: the daemon cannot keep the conversation; retry once the owner fixed it.
  if (code.startsWith("STORE_")) return new HttpError(503, code.toLowerCase(), message);
  return new HttpError(code.startsWith("MODEL_") ? 502 : 500, code.toLowerCase(), message, retry);
}
