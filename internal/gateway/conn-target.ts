/**
 * The target of one live websocket connection, `gateway:conn:<id>`: where the approval requests of
 * the turns it started are sent, and the only non-owner client that may settle them. It lives as
 * long as the socket, so it is never stored as a session's origin.
 */
import type { WsConn } from "./ws-server.js";

const CONN_PREFIX = "gateway:conn:";

/** The target of one live connection: where its turns' approval requests are sent. */
export function connTarget(conn: Pick<WsConn, "id">): string {
  return `${CONN_PREFIX}${conn.id}`;
}

/** The connection id of a `gateway:conn:<id>` target, or undefined for any other target. */
export function connIdOf(target: string): number | undefined {
  if (!target.startsWith(CONN_PREFIX)) return undefined;
  const id = Number(target.slice(CONN_PREFIX.length));
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
