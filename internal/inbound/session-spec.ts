/**
 * How a door names the session of a message, before the agent is known: the front desk turns it into
 * a session key once it has routed the message to an agent (the key starts with the agent's id).
 */
import { sessionKeys } from "../session/keys.js";

/** The session a door means. */
export type SessionSpec =
  /** An existing session, by its key (the `/api` turn routes). */
  | { key: string }
  /** A gateway session name: `agent:<agent>:gateway:<name>` (`/v1`, the one-shot `/api` chat). */
  | { gateway: string }
  /**
   * What a gateway client or a webhook wrote: a bare name as `agent:<agent>:gateway:<name>`, a full
   * key (anything with a `:`) or `heartbeat` as is.
   */
  | { named: string }
  /** A direct chat, one session per user. */
  | { dm: string }
  /** A group chat, one session per chat (and per forum topic / thread). */
  | { group: string; threadId?: string };

/** A session name or id that cannot be part of a key (a `:` or a space). */
export class SessionKeyError extends Error {
  readonly code = "INVALID_SESSION_KEY";
}

/** The session key of `spec` for `agentId` on `channel`; throws {@link SessionKeyError}. */
export function sessionKeyFor(spec: SessionSpec, agentId: string, channel: string): string {
  try {
    if ("key" in spec) return spec.key;
    if ("gateway" in spec) return sessionKeys.gateway(agentId, spec.gateway);
    if ("named" in spec)
      return spec.named === "heartbeat" || spec.named.includes(":")
        ? spec.named
        : sessionKeys.gateway(agentId, spec.named);
    if ("dm" in spec) return sessionKeys.dm(agentId, channel, spec.dm);
    return sessionKeys.group(agentId, channel, spec.group, spec.threadId);
  } catch (err) {
    throw new SessionKeyError((err as Error).message);
  }
}
