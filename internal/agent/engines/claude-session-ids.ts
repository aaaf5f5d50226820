/**
 * The Claude Code session id of each Familiar session key (table `claude_sessions`), so a turn after an
 * idle reap, a crash or a daemon restart resumes with `--resume <id>`.
 */
import type { Db } from "../../store/db.js";

/** Persisted CLI session ids per session key. */
export class ClaudeSessionIds {
  private get;
  private set;
  private del;
  constructor(db: Db) {
    this.get = db.prepare<[string], { cli_session_id: string }>(
      "SELECT cli_session_id FROM claude_sessions WHERE session_key = ?",
    );
    this.set = db.prepare(
      "INSERT INTO claude_sessions (session_key, cli_session_id, updated_at) VALUES (?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET cli_session_id = excluded.cli_session_id, updated_at = excluded.updated_at",
    );
    this.del = db.prepare("DELETE FROM claude_sessions WHERE session_key = ?");
  }
  load(key: string): string | undefined {
    return this.get.get(key)?.cli_session_id;
  }
  save(key: string, id: string): void {
    this.set.run(key, id, Date.now());
  }
  clear(key: string): void {
    this.del.run(key);
  }
}
