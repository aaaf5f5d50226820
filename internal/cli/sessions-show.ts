/**
 * `familiar sessions show <id|key>`: a session's messages with their local times and request ids, so
 * any turn leads to its call tree (`familiar trace <request id>`), and, when it read untrusted text,
 * its taint (every source: what, from where, when). Reads the database directly (safe while the
 * daemon runs).
 */
import type { TaintSource } from "../core/taint.js";
import { describeTaint } from "../core/taint.js";
import { taintOfSessions } from "../tools/taint/taint-store.js";
import { formatTable, localTime } from "./cli-format.js";
import { resolveSessionRef, withDb } from "./sessions.js";

/** One message as shown. */
export interface ShownMessage {
  id: number;
  role: string;
  createdAt: number;
  requestId: string | null;
  status: string;
  toolName: string | null;
  content: string;
}

export interface ShownSession {
  id: string;
  key: string;
  agentId: string;
  archived: boolean;
  messageCount: number;
  /** Prompt-injection containment: true once the session read untrusted text (until /new). */
  tainted: boolean;
  taint: TaintSource[];
  /** The newest `limit` messages, oldest first. */
  messages: ShownMessage[];
}

/** Reads the session and its last `limit` messages; undefined when no session has that id or key. */
function readSession(configPath: string, ref: string, limit: number): ShownSession | undefined {
  return withDb(configPath, (db) => {
    const id = resolveSessionRef(db, ref);
    if (!id) return undefined;
    const s = db
      .prepare<
        [string],
        { id: string; key: string; agent_id: string; archived_at: number | null; n: number }
      >(
        `SELECT s.id, s.key, s.agent_id, s.archived_at,
           (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n FROM sessions s WHERE s.id = ?`,
      )
      .get(id);
    if (!s) return undefined;
    const rows = db
      .prepare<
        [string, number],
        {
          id: number;
          role: string;
          created_at: number;
          request_id: string | null;
          status: string;
          tool_name: string | null;
          content: string;
        }
      >(
        `SELECT id, role, created_at, request_id, status, tool_name, content FROM messages
          WHERE session_id = ? ORDER BY id DESC LIMIT ?`,
      )
      .all(id, limit)
      .reverse();
    const taint = taintOfSessions(db, [id]).get(id) ?? [];
    return {
      id: s.id,
      key: s.key,
      agentId: s.agent_id,
      archived: s.archived_at !== null,
      messageCount: s.n,
      tainted: taint.length > 0,
      taint,
      messages: rows.map((r) => ({
        id: r.id,
        role: r.role,
        createdAt: r.created_at,
        requestId: r.request_id,
        status: r.status,
        toolName: r.tool_name,
        content: r.content,
      })),
    };
  });
}

/** Renders the session as a table: time, role, request id, status, the text on one line. */
export function formatSession(s: ShownSession): string {
  const oneLine = (t: string): string => {
    const flat = t.replace(/\s+/g, " ").trim();
    return flat.length > 100 ? `${flat.slice(0, 99)}…` : flat;
  };
  const table = formatTable(
    ["TIME", "ROLE", "REQUEST ID", "STATUS", "TEXT"],
    s.messages.map((m) => [
      localTime(m.createdAt),
      m.role === "tool" && m.toolName ? `tool ${m.toolName}` : m.role,
      m.requestId ?? "-",
      m.status,
      oneLine(m.content),
    ]),
  );
  const taint: string[] = [];
  if (!s.tainted) taint.push("taint: none: this conversation has read nothing untrusted");
  else {
    taint.push("taint: TAINTED: sends, unknown hosts, network commands, cron, agent changes ask the owner");
    for (const t of s.taint)
      taint.push(`  - ${localTime(t.at)}  ${t.kind}: ${t.detail}  (it ${describeTaint(t)})`);
    taint.push("  only a new session (/new) is clean again");
  }
  return (
    [`session ${s.key} (${s.id}, agent ${s.agentId})`, "", ...table, "", ...taint].join("\n") +
    "\n\nA request's call tree, usage and cost: familiar trace <request id>\n"
  );
}

/** `familiar sessions show <id|key>`; exit code 1 when no session has that id or key. */
export function sessionsShowCommand(
  ref: string,
  opts: { config: string; limit?: string; json?: boolean },
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): number {
  const limit = Math.max(1, Math.min(10_000, Number(opts.limit ?? 50) || 50));
  const s = readSession(opts.config, ref, limit);
  if (!s) {
    err.write(`familiar sessions show: no session with id or key "${ref}"\n`);
    return 1;
  }
  out.write(opts.json ? JSON.stringify(s, null, 2) + "\n" : formatSession(s));
  return 0;
}
