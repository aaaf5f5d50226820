/**
 * Which live websocket connection shows which chat session: the session a connection last sent to
 * (`chat.send`) or read (`chat.history`). The web chat reads a session's history when it opens it,
 * `familiar chat` sends to its session; so "the clients in a session" are the ones that last did
 * either there. A connection shows one session at a time and leaves it when it closes.
 */
import type { WsConn } from "./ws-server.js";

export class SessionWatchers {
  private bySession = new Map<string, Set<number>>();
  private byConn = new Map<number, string>();

  /** `conn` now shows `sessionKey` (and no longer the one it showed before). */
  see(conn: Pick<WsConn, "id" | "onClose">, sessionKey: string): void {
    const before = this.byConn.get(conn.id);
    if (before === sessionKey) return;
    if (before === undefined) conn.onClose(() => this.drop(conn.id));
    else this.leave(conn.id, before);
    this.byConn.set(conn.id, sessionKey);
    let set = this.bySession.get(sessionKey);
    if (!set) this.bySession.set(sessionKey, (set = new Set()));
    set.add(conn.id);
  }

  /** The connections showing `sessionKey`. */
  of(sessionKey: string): number[] {
    return [...(this.bySession.get(sessionKey) ?? [])];
  }

  private drop(connId: number): void {
    const key = this.byConn.get(connId);
    this.byConn.delete(connId);
    if (key !== undefined) this.leave(connId, key);
  }

  private leave(connId: number, key: string): void {
    const set = this.bySession.get(key);
    set?.delete(connId);
    if (set?.size === 0) this.bySession.delete(key);
  }
}
