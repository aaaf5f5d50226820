/**
 * Conversations brought from another assistant (`familiar import openclaw`), stored as archived
 * sessions. Kept beside session-store.ts (which holds every other query of these tables) because it
 * writes rows the live store never does: original timestamps and no head.
 *
 * Invariants:
 * - an imported session has no head: it is never resumed by a chat, only listed, read and searched
 *   (the memory index picks its messages up by id like any others);
 * - its messages keep their original times, so memory search dates them right;
 * - idempotent by session id: a second call appends only the messages beyond those already stored
 *   (transcripts only grow), in one commit.
 */
import type { Db } from "../store/db.js";

export interface ImportedSession {
  id: string;
  key: string;
  agentId: string;
  createdAt: number;
  updatedAt: number;
  origin: string;
}

export interface ImportedMessage {
  role: "user" | "assistant";
  content: string;
  createdAt: number;
}

/** Stores (or extends) one archived session. Returns whether it was created and how many messages were added. */
export function importArchivedSession(
  db: Db,
  s: ImportedSession,
  messages: ImportedMessage[],
): { created: boolean; added: number } {
  const exists = db.prepare<[string], { id: string }>("SELECT id FROM sessions WHERE id = ?");
  const count = db.prepare<[string], { n: number }>(
    "SELECT COUNT(*) AS n FROM messages WHERE session_id = ?",
  );
  const insertSession = db.prepare(
    `INSERT INTO sessions (id, key, agent_id, created_at, updated_at, archived_at, origin)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertMessage = db.prepare(
    `INSERT INTO messages (session_id, role, content, status, created_at) VALUES (?, ?, ?, 'ok', ?)`,
  );
  // tail_kind NULL: the rows appended here do not go through SessionStore.append (unknown, see TailKind).
  const touch = db.prepare(
    "UPDATE sessions SET updated_at = ?, archived_at = ?, tail_kind = NULL WHERE id = ?",
  );
  return db.transaction(() => {
    const existed = exists.get(s.id) !== undefined;
    if (!existed) insertSession.run(s.id, s.key, s.agentId, s.createdAt, s.updatedAt, s.updatedAt, s.origin);
    const have = existed ? (count.get(s.id)?.n ?? 0) : 0;
    for (const m of messages.slice(have)) insertMessage.run(s.id, m.role, m.content, m.createdAt);
    const added = Math.max(0, messages.length - have);
    if (existed && added > 0) touch.run(s.updatedAt, s.updatedAt, s.id);
    return { created: !existed, added };
  })();
}
