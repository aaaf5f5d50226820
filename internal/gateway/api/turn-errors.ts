/**
 * Maps a failed turn (TurnResult with finishReason "error") to an `/api` error: model failures are the
 * upstream's fault (502, or 429 when rate limited), a missing model is 503, anything else is 500.
 * Codes are the turn's own error codes, lower-cased.
 */
import type { TurnResult } from "../../core/host.js";
import { HttpError } from "../http-util.js";
import { publicTurnMessage, retryAfterHeader } from "../turn-error-public.js";
import { apiError } from "./api-errors.js";

export function turnFailure(r: TurnResult): HttpError {
  const code = r.error?.code ?? "turn_failed";
  // API clients see neither the upstream's base URL nor less than its Retry-After (turn-error-public.ts).
  const message = publicTurnMessage(r.error?.message ?? (r.text || "the turn failed"));
  const retry = retryAfterHeader(r);
  const withRetry = (e: HttpError): HttpError =>
    Object.keys(retry).length > 0
      ? new HttpError(e.status, e.code, e.message, { ...e.headers, ...retry }, e.param)
      : e;
  if (code === "AGENT_UNKNOWN") return apiError(404, "agent_not_found", message);
  if (code === "MODEL_RATE_LIMIT") return withRetry(apiError(429, "model_rate_limited", message));
  if (code === "MODEL_NOT_CONFIGURED") return apiError(503, "model_not_configured", message);
  return withRetry(apiError(code.startsWith("MODEL_") ? 502 : 500, code.toLowerCase(), message));
}
