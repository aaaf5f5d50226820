/**
 * `familiar sessions show <id|key>`: one session's facts and, when it read untrusted text, its taint
 * (every source: what, from where, when). Reads the database directly (read-only, safe while the
 * daemon runs).
 */
import type { TaintSource } from "../core/taint.js";
import { describeTaint } from "../core/taint.js";
import { taintOfSessions } from "../tools/taint/taint-store.js";
import { resolveSessionRef, withDb } from "./sessions.js";

interface Shown {
  sessionId: string;
  sessionKey: string;
  agentId: string;
  createdAt: number;
  archived: boolean;
  messageCount: number;
  tainted: boolean;
  taint: TaintSource[];
}

/** Renders a session and its taint for the terminal. */
export function formatSession(s: Shown): string {
  const lines = [
    `session ${s.sessionId}`,
    `  key      ${s.sessionKey}`,
    `  agent    ${s.agentId}`,
    `  created  ${new Date(s.createdAt).toISOString()}${s.archived ? "  (archived)" : ""}`,
    `  messages ${s.messageCount}`,
  ];
  if (!s.tainted) lines.push("  taint    none: this conversation has read nothing untrusted");
  else {
    lines.push(
      `  taint    TAINTED: sends, unknown hosts, network commands, cron, agent changes ask the owner`,
    );
    for (const t of s.taint)
      lines.push(`    - ${new Date(t.at).toISOString()}  ${t.kind}: ${t.detail}  (it ${describeTaint(t)})`);
    lines.push("  only a new session (/new) is clean again");
  }
  return lines.join("\n") + "\n";
}

export function sessionsShowCommand(
  ref: string,
  opts: { config: string; json?: boolean },
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): number {
  const shown = withDb(opts.config, (db): Shown | undefined => {
    const id = resolveSessionRef(db, ref);
    if (!id) return undefined;
    const row = db
      .prepare<
        [string],
        {
          id: string;
          key: string;
          agent_id: string;
          created_at: number;
          archived_at: number | null;
          n: number;
        }
      >(
        `SELECT s.id, s.key, s.agent_id, s.created_at, s.archived_at,
           (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n FROM sessions s WHERE s.id = ?`,
      )
      .get(id);
    if (!row) return undefined;
    const taint = taintOfSessions(db, [id]).get(id) ?? [];
    return {
      sessionId: row.id,
      sessionKey: row.key,
      agentId: row.agent_id,
      createdAt: row.created_at,
      archived: row.archived_at !== null,
      messageCount: row.n,
      tainted: taint.length > 0,
      taint,
    };
  });
  if (!shown) {
    err.write(`familiar sessions show: no session with id or key "${ref}"\n`);
    return 1;
  }
  out.write(opts.json ? JSON.stringify(shown, null, 2) + "\n" : formatSession(shown));
  return 0;
}
