/**
 * Maps a failed turn (TurnResult with finishReason "error") to an `/api` error: model failures are the
 * upstream's fault (502, or 429 when rate limited), a missing model is 503, anything else is 500.
 * Codes are the turn's own error codes, lower-cased.
 */
import type { TurnResult } from "../../core/host.js";
import type { HttpError } from "../http-util.js";
import { apiError } from "./api-errors.js";

export function turnFailure(r: TurnResult): HttpError {
  const code = r.error?.code ?? "turn_failed";
  const message = r.error?.message ?? (r.text || "the turn failed");
  if (code === "AGENT_UNKNOWN") return apiError(404, "agent_not_found", message);
  if (code === "MODEL_RATE_LIMIT") return apiError(429, "model_rate_limited", message);
  if (code === "MODEL_NOT_CONFIGURED") return apiError(503, "model_not_configured", message);
  return apiError(code.startsWith("MODEL_") ? 502 : 500, code.toLowerCase(), message);
}
