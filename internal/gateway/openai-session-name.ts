import { bad } from "./openai-chat-request.js";

/**
 * The session name of `user` / `X-Familiar-Session` on `/v1`: the session is
 * `agent:<agent>:gateway:<name>`, so `:` and spaces become `_` (a name can never reach another kind
 * of session) and it is cut at 128 characters.
 */
export function sessionName(raw: string): string {
  const name = raw
    .trim()
    .replace(/[:\s]+/g, "_")
    .slice(0, 128);
  if (!name) throw bad("user / X-Familiar-Session must not be empty", "user");
  return name;
}
