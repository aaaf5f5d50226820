/**
 * Per-chat explicit agent selection (`/agent <id>`), persisted in the core `kv` table under
 * `chat_agent:<channel>:<chat scope>` so it survives restarts. Routing order (issue 11): this choice,
 * then a `routing` config entry, then `agents.default`.
 */
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import { KvNamespace } from "../store/kv.js";

/**
 * The choices of one database read so far (scope -> agent, null: none), shared by every store on it.
 * Every `/v1` request with a session name and every chat message asks, so a read is one Map lookup
 * and one pragma instead of a kv query (issue 46 item 10).
 *
 * CACHE INVARIANT (a cached answer is what SQLite would answer): entries are kept only while nothing
 * could have changed the choices since they were read:
 * - this connection's writes ({@link AgentChoiceStore.set}, {@link AgentChoiceStore.clear}, the only
 *   writers of `chat_agent:`) drop the cache after the statement ran;
 * - another connection's commits (a restore, another process) move `PRAGMA data_version`, read before
 *   every use;
 * - a write inside a transaction may still roll back: until a read outside any transaction, reads go
 *   to SQLite and are not kept.
 */
interface ChoiceCache {
  version: number;
  byScope: Map<string, string | null>;
  uncommitted: boolean;
}
const caches = new WeakMap<Db, ChoiceCache>();
/** Scopes kept at most (a Map cleared whole beyond it: a chat count, not a leak). */
const MAX_CACHED = 10_000;

export class AgentChoiceStore {
  private kv: KvNamespace;
  private cache: ChoiceCache;
  private version: () => number;

  constructor(
    private db: Db,
    now: () => number = Date.now,
  ) {
    this.kv = new KvNamespace(db, "chat_agent:", now);
    let c = caches.get(db);
    if (!c) caches.set(db, (c = { version: -1, byScope: new Map(), uncommitted: false }));
    this.cache = c;
    const stmt = db.prepare<[], number>("PRAGMA data_version").pluck();
    this.version = () => stmt.get() ?? 0;
  }

  /** The explicit agent of a chat scope (`<channel>:<chatId>[:<threadId>]`), if any. */
  choice(scope: string): string | undefined {
    const c = this.cache;
    if (c.uncommitted) {
      if (this.db.inTransaction) return this.kv.get(scope);
      c.uncommitted = false;
      c.byScope.clear();
    }
    const version = this.version();
    if (version !== c.version) {
      c.byScope.clear();
      c.version = version;
    }
    const hit = c.byScope.get(scope);
    if (hit !== undefined) return hit ?? undefined;
    const value = this.kv.get(scope);
    if (c.byScope.size >= MAX_CACHED) c.byScope.clear();
    c.byScope.set(scope, value ?? null);
    return value;
  }
  set(scope: string, agentId: string): void {
    try {
      this.kv.set(scope, agentId);
    } finally {
      this.dropCache();
    }
  }
  clear(scope: string): void {
    try {
      this.kv.delete(scope);
    } finally {
      this.dropCache();
    }
  }

  private dropCache(): void {
    this.cache.byScope.clear();
    if (this.db.inTransaction) this.cache.uncommitted = true;
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
