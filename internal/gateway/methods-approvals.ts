/**
 * `approvals.list`, `approvals.show` and `approvals.resolve`: approval requests over the websocket.
 * An owner-role client (the owner's CLI, the console) sees and settles every pending request. A
 * chat-role client (the web chat, `familiar chat`) sees and settles the requests asked on a gateway
 * connection (`gateway:conn:<id>`): its own, and those of the web chat on another device or before a
 * reload; it gets `forbidden` for every other one, so a chat integration that holds the token cannot
 * decide what was asked on Telegram. `show` returns the whole payload and its hash; `resolve` with
 * `hash` settles only when the pending request still shows exactly that payload, and a chat client
 * answering a question asked on another connection must name that hash (it answers what it showed).
 */
import { foreignApproval } from "../inbound/commands.js";
import { hashMatches } from "../tools/approval-text.js";
import type { PendingApproval } from "../tools/approvals.js";
import { connIdOf, connTarget } from "./conn-target.js";
import { MethodError } from "./protocol.js";
import type { GatewayDeps, GatewayRuntime } from "./runtime.js";
import type { MethodHandler, WsConn } from "./ws-server.js";

/** Whether `conn` may see and answer `a`: the owner any; a chat client those asked on the gateway. */
export function mayAnswer(conn: WsConn, a: Pick<PendingApproval, "replyTarget">): boolean {
  return conn.role === "owner" || connIdOf(a.replyTarget) !== undefined;
}

export function approvalMethods(rt: GatewayRuntime): [string, MethodHandler][] {
  const part = (): NonNullable<GatewayDeps["approvals"]> => {
    const p = rt.deps.approvals;
    if (!p) throw new MethodError("unavailable", "approvals are not available (tools are not running)");
    return p;
  };
  const gone = (id: string): MethodError =>
    new MethodError("not_found", `no pending approval ${id} (it may have expired or been decided)`);
  /** The pending request `id` if `conn` may answer it; forbidden for another chat's, else not found. */
  const pendingFor = (id: string, conn: WsConn): PendingApproval => {
    const a = part().show(id);
    if (a && !mayAnswer(conn, a)) throw new MethodError("forbidden", foreignApproval(id));
    if (!a) throw gone(id);
    return a;
  };
  const list: MethodHandler = (p, conn) => {
    // The web chat asks for the questions of the session it opens (after a reload, on another device).
    const sessionKey = p.optStr("sessionKey");
    return {
      approvals: part()
        .list()
        .filter((a) => mayAnswer(conn, a) && (sessionKey === undefined || a.sessionKey === sessionKey)),
    };
  };
  const show: MethodHandler = (p, conn) => ({ approval: pendingFor(p.str("id").trim().toLowerCase(), conn) });
  const resolve: MethodHandler = (p, conn) => {
    const id = p.str("id").trim().toLowerCase();
    const decision = p.str("decision");
    if (decision !== "approve" && decision !== "deny")
      throw new MethodError("invalid_params", 'params.decision: expected "approve" or "deny"');
    const scope = p.optStr("scope") ?? "once";
    if (scope !== "once" && scope !== "target" && scope !== "session")
      throw new MethodError(
        "invalid_params",
        `params.scope: expected "once", "target" or "session", got "${scope}"`,
      );
    const hash = p.optStr("hash")?.trim().toLowerCase();
    const a = pendingFor(id, conn);
    // Another connection's question (another device, the page before a reload): answered only with
    // the hash of what this client showed, never by a bare id.
    const own = conn.role === "owner" || a.replyTarget === connTarget(conn);
    if (!own && hash === undefined)
      throw new MethodError(
        "invalid_params",
        `params.hash: approval ${id} was asked on another connection; answer with the hash of the question you showed (approvals.show ${id})`,
      );
    if (hash !== undefined && !hashMatches(a.payloadHash, hash))
      throw new MethodError(
        "conflict",
        `approval ${id} shows another payload than the one you answered (hash ${hash.slice(0, 12)}…, now ${a.payloadHash.slice(0, 12)}…): nothing was settled; look at it again (familiar approvals show ${id})`,
      );
    const done = part().resolve(id, decision === "approve" ? "approved" : "denied", {
      // A chat client answers as the connection the question was sent to (checked above).
      ...(conn.role === "owner" ? {} : { fromTarget: a.replyTarget }),
      ...(scope !== "once" ? { scope } : {}),
      ...(hash !== undefined ? { hash } : {}),
    });
    if (!done) throw gone(id);
    rt.ctx.logger.info(
      { id, decision, client: conn.clientName, role: conn.role },
      "approval settled over the gateway",
    );
    return { id, decision: decision === "approve" ? "approved" : "denied" };
  };
  return [
    ["approvals.list", list],
    ["approvals.show", show],
    ["approvals.resolve", resolve],
  ];
}
