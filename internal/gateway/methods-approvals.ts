/**
 * `approvals.list`, `approvals.show` and `approvals.resolve`: approval requests over the websocket.
 * An owner-role client (the owner's CLI, the console) sees and settles every pending request; a
 * chat-role client only those sent to its own connection (`gateway:conn:<id>`), and gets `forbidden`
 * for the others, so a chat integration that holds the token cannot decide what was asked on
 * Telegram. `show` returns the whole payload and its hash; `resolve` with `hash` settles only when
 * the pending request still shows exactly that payload.
 */
import { foreignApproval } from "../inbound/commands.js";
import { connTarget } from "./conn-target.js";
import { MethodError } from "./protocol.js";
import type { GatewayDeps, GatewayRuntime } from "./runtime.js";
import type { MethodHandler, WsConn } from "./ws-server.js";

/** The approval target of a connection, or undefined for the owner (any target). */
export function approverTarget(conn: WsConn): string | undefined {
  return conn.role === "owner" ? undefined : connTarget(conn);
}

export function approvalMethods(rt: GatewayRuntime): [string, MethodHandler][] {
  const part = (): NonNullable<GatewayDeps["approvals"]> => {
    const p = rt.deps.approvals;
    if (!p) throw new MethodError("unavailable", "approvals are not available (tools are not running)");
    return p;
  };
  const list: MethodHandler = (_p, conn) => {
    const target = approverTarget(conn);
    return {
      approvals: part()
        .list()
        .filter((a) => target === undefined || a.replyTarget === target),
    };
  };
  const show: MethodHandler = (p, conn) => {
    const id = p.str("id").trim().toLowerCase();
    const approvals = part();
    const access = approvals.access(id, approverTarget(conn));
    if (access === "foreign") throw new MethodError("forbidden", foreignApproval(id));
    const a = approvals.show(id);
    if (!a)
      throw new MethodError("not_found", `no pending approval ${id} (it may have expired or been decided)`);
    return { approval: a };
  };
  const resolve: MethodHandler = (p, conn) => {
    const id = p.str("id").trim().toLowerCase();
    const decision = p.str("decision");
    if (decision !== "approve" && decision !== "deny")
      throw new MethodError("invalid_params", 'params.decision: expected "approve" or "deny"');
    const approvals = part();
    const target = approverTarget(conn);
    const scope = p.optStr("scope") ?? "once";
    if (scope !== "once" && scope !== "target" && scope !== "session")
      throw new MethodError(
        "invalid_params",
        `params.scope: expected "once", "target" or "session", got "${scope}"`,
      );
    const access = approvals.access(id, target);
    if (access === "foreign") throw new MethodError("forbidden", foreignApproval(id));
    const hash = p.optStr("hash")?.trim().toLowerCase();
    const shown = approvals.show(id);
    if (hash !== undefined && shown && shown.payloadHash !== hash)
      throw new MethodError(
        "conflict",
        `approval ${id} shows another payload than the one you answered (hash ${hash.slice(0, 12)}…, now ${shown.payloadHash.slice(0, 12)}…): nothing was settled; look at it again (familiar approvals show ${id})`,
      );
    const done =
      access === "ok" &&
      approvals.resolve(id, decision === "approve" ? "approved" : "denied", {
        ...(target === undefined ? {} : { fromTarget: target }),
        ...(scope !== "once" ? { scope } : {}),
        ...(hash !== undefined ? { hash } : {}),
      });
    if (!done)
      throw new MethodError("not_found", `no pending approval ${id} (it may have expired or been decided)`);
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
