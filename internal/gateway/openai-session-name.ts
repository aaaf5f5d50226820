import type { FrontDeskPort } from "../inbound/front-desk.js";
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

/**
 * The agent of a named session when the request names none (`model: familiar`): the rule of the
 * websocket's `chat.send`, so one session name reaches one agent on both doors (issue 46): the
 * name's `/agent` choice > `routing` (channel `gateway`, chat = the name) > `agents.default`.
 * `familiar/<id>` names the agent outright, like `chat.send`'s `agent` param.
 */
export function namedSessionAgent(desk: FrontDeskPort, name: string): string {
  return desk.route({
    channel: "gateway",
    from: { chatId: name, scope: `gateway:${name}` },
    session: { named: name },
  }).agentId;
}
