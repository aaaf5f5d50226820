/**
 * The output side of `/v1/responses` (openai-responses.ts): ids, output items and usage in the
 * shapes of OpenAI's SDK types (node_modules/openai/resources/responses).
 */
import { randomBytes } from "node:crypto";
import type { Usage } from "../models/types.js";
import type { ResponsesRequest } from "./openai-responses-request.js";

export type Obj = Record<string, unknown>;
/** A new random id with OpenAI's prefix (`resp`, `msg`, `fc`). */
export const rid = (prefix: string): string => `${prefix}_${randomBytes(16).toString("hex")}`;

/** Usage in the Responses API's shape. */
export function usageJson(u: Usage): Obj {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.total || u.input + u.output,
  };
}

/** An assistant `message` output item. */
export const messageItem = (id: string, text: string, status: "in_progress" | "completed"): Obj => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: status === "completed" ? [{ type: "output_text", text, annotations: [], logprobs: [] }] : [],
});

/** A `function_call` output item. */
export const callItem = (
  c: { id: string; name: string; arguments: string },
  status: "in_progress" | "completed",
): Obj => ({
  id: rid("fc"),
  type: "function_call",
  status,
  call_id: c.id,
  name: c.name,
  arguments: status === "completed" ? c.arguments : "",
});

/** `text.format` as the response echoes it. */
export function formatOut(f: NonNullable<NonNullable<ResponsesRequest["client"]>["responseFormat"]>): Obj {
  return f.type === "json_schema" ? { type: "json_schema", ...f.json_schema } : { type: f.type };
}
