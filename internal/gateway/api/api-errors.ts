/**
 * Errors of the `/api` surface: one JSON shape `{error: {code, message, field?}}` with a stable
 * machine `code`, built on the gateway's HttpError so auth and body-size errors keep their codes.
 */
import type { ServerResponse } from "node:http";
import type { ZodError } from "zod";
import { HttpError } from "../http-util.js";

/** An `/api` error: an HttpError whose `param` is the failing body field (`field` in the JSON). */
export function apiError(status: number, code: string, message: string, field?: string): HttpError {
  return new HttpError(status, code, message, {}, field);
}

/** 404 for an unknown agent. */
export function agentNotFound(id: string): HttpError {
  return apiError(404, "agent_not_found", `no agent "${id}"`);
}

/** 404 for an unknown session (or one that is not reachable under this agent). */
export function sessionNotFound(sid: string): HttpError {
  return apiError(404, "session_not_found", `no session "${sid}"`);
}

/** 400 for a zod validation failure: the first issue names the failing field (dotted path). */
export function fromZod(err: ZodError, prefix = ""): HttpError {
  const issue = err.issues[0];
  const parts = issue ? issue.path.map(String) : [];
  // An unknown key is reported on its parent; name the key itself.
  if (issue?.code === "unrecognized_keys" && issue.keys[0] !== undefined) parts.push(issue.keys[0]);
  const path = parts.join(".");
  const field = prefix && path ? `${prefix}.${path}` : prefix || path;
  const why = issue?.message ?? "invalid value";
  return apiError(400, "invalid_body", field ? `${field}: ${why}` : why, field || undefined);
}

/** Writes an error as `{error:{code,message,field?}}` with the error's status and headers. */
export function sendApiError(res: ServerResponse, err: HttpError): void {
  const body = JSON.stringify({
    error: { code: err.code, message: err.message, ...(err.param ? { field: err.param } : {}) },
  });
  res.writeHead(err.status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    ...err.headers,
  });
  res.end(body);
}
