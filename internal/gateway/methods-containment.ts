/**
 * Prompt-injection containment over the websocket: `sessions.taint` (a session's taint sources, for
 * the console's session view), `approvals.grants` and `approvals.revoke` (the owner's standing
 * answers), `memory.tainted` (memory entries written by tainted turns). Grants and tainted memory are
 * for owner-role clients only: a chat integration that holds the token neither reads nor ends them.
 */
import { MethodError } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";
import type { MethodHandler, WsConn } from "./ws-server.js";

function ownerOnly(conn: WsConn, what: string): void {
  if (conn.role !== "owner") throw new MethodError("forbidden", `${what} is for the owner's clients only`);
}

export function containmentMethods(rt: GatewayRuntime): [string, MethodHandler][] {
  const part = (): NonNullable<GatewayRuntime["deps"]["containment"]> => {
    const c = rt.deps.containment;
    if (!c) throw new MethodError("unavailable", "containment is not available (tools are not running)");
    return c;
  };
  const taint: MethodHandler = (p) => {
    const sessionId = p.str("sessionId");
    const c = part();
    return { sessionId, tainted: c.sourcesOf(sessionId).length > 0, sources: c.sourcesOf(sessionId) };
  };
  const grants: MethodHandler = (_p, conn) => {
    ownerOnly(conn, "approvals.grants");
    return { grants: part().grants.list() };
  };
  const revoke: MethodHandler = (p, conn) => {
    ownerOnly(conn, "approvals.revoke");
    const id = p.str("id").trim();
    if (!part().grants.revoke(id))
      throw new MethodError("not_found", `no live grant ${id} (it may have been revoked already)`);
    rt.ctx.logger.info({ id, client: conn.clientName }, "containment grant revoked");
    return { id, revoked: true };
  };
  const tainted: MethodHandler = (p, conn) => {
    ownerOnly(conn, "memory.tainted");
    return { entries: part().memory.list(p.optBool("all") ?? false) };
  };
  return [
    ["sessions.taint", taint],
    ["approvals.grants", grants],
    ["approvals.revoke", revoke],
    ["memory.tainted", tainted],
  ];
}
