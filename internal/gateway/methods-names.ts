/**
 * `sessions.names`: the titles of sessions the console shows by id or key (the costliest sessions of
 * the usage view, an approval's chat, a turn's session), so it names them as the web chat does
 * ("Could you draft plan 7…") rather than printing `agent:main:gateway:api-9994d2ea…`. For owner-role
 * clients only: titles are the first words of a chat, which a chat integration holding the token has no
 * business reading across sessions.
 */
import { MethodError, type Params } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";
import type { MethodHandler } from "./ws-server.js";
import { titleOf } from "./methods-chat.js";

/** At most this many ids and keys in one call (a page of the console). */
const MAX = 200;

/** One named session; `title` is null for a session without a set title or a user message. */
export interface SessionName {
  id: string;
  key: string;
  agentId: string;
  title: string | null;
}

/** `params.<name>`: an optional list of non-empty strings, at most {@link MAX}. */
function list(p: Params, name: string): string[] {
  const v = p.o[name];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX || !v.every((x) => typeof x === "string" && x !== ""))
    throw new MethodError("invalid_params", `params.${name}: expected up to ${MAX} non-empty strings`);
  return v as string[];
}

export function nameMethods(rt: GatewayRuntime): [string, MethodHandler][] {
  const names: MethodHandler = (p, conn) => {
    if (conn.role !== "owner")
      throw new MethodError("forbidden", "sessions.names is for the owner's clients only");
    const ids = list(p, "ids");
    const keys = list(p, "keys");
    type Row = { id: string; key: string; agent_id: string; meta: string | null };
    const byId = rt.ctx.db.prepare<[string], Row>(
      "SELECT id, key, agent_id, meta FROM sessions WHERE id = ?",
    );
    // A key names its live session (the head), as everywhere else.
    const byKey = rt.ctx.db.prepare<[string], Row>(
      `SELECT s.id, s.key, s.agent_id, s.meta FROM session_heads h JOIN sessions s ON s.id = h.session_id
       WHERE h.key = ?`,
    );
    const out = new Map<string, SessionName>();
    for (const row of [...ids.map((i) => byId.get(i)), ...keys.map((k) => byKey.get(k))])
      if (row && !out.has(row.id))
        out.set(row.id, {
          id: row.id,
          key: row.key,
          agentId: row.agent_id,
          title: titleOf(rt, row).title ?? null,
        });
    return { sessions: [...out.values()] };
  };
  return [["sessions.names", names]];
}
