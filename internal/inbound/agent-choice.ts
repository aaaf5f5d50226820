/**
 * Per-chat explicit agent selection (`/agent <id>`), persisted in the core `kv` table under
 * `chat_agent:<channel>:<chat scope>` so it survives restarts. Routing order (issue 11): this choice,
 * then a `routing` config entry, then `agents.default`.
 */
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import { KvNamespace } from "../store/kv.js";

export class AgentChoiceStore {
  private kv: KvNamespace;

  constructor(db: Db, now: () => number = Date.now) {
    this.kv = new KvNamespace(db, "chat_agent:", now);
  }

  /** The explicit agent of a chat scope (`<channel>:<chatId>[:<threadId>]`), if any. */
  choice(scope: string): string | undefined {
    return this.kv.get(scope);
  }
  set(scope: string, agentId: string): void {
    this.kv.set(scope, agentId);
  }
  clear(scope: string): void {
    this.kv.delete(scope);
  }
}

/** Where a message comes from, for routing. */
export interface RouteSource {
  channel: string;
  chatId: string;
  guildId?: string;
}

/**
 * The agent for a chat: explicit choice > the most specific `routing` entry (chat, then guild, then
 * channel-wide; the first of equally specific entries) > `agents.default`.
 *
 * `exists` (when given) skips a choice or a routing entry whose agent is not defined (a removed agent
 * file, a typo in `routing`), so the message falls through to the next rule instead of failing. The
 * default is returned as is: when it cannot be built, the host answers with the echo fallback.
 */
export function resolveAgentId(
  config: Config,
  src: RouteSource,
  explicit?: string,
  exists: (agentId: string) => boolean = () => true,
): string {
  if (explicit && exists(explicit)) return explicit;
  let best: { agent: string; score: number } | undefined;
  for (const r of config.routing) {
    if (r.channel !== src.channel) continue;
    if (r.chat !== undefined && r.chat !== src.chatId) continue;
    if (r.guild !== undefined && r.guild !== src.guildId) continue;
    if (!exists(r.agent)) continue;
    const score = r.chat !== undefined ? 3 : r.guild !== undefined ? 2 : 1;
    if (!best || score > best.score) best = { agent: r.agent, score };
  }
  return best?.agent ?? config.agents.default;
}
