/**
 * OpenClaw's SQLite stores, read without touching them. OpenClaw 2026.9 keeps cron jobs and DM
 * pairing approvals in `state/openclaw.sqlite` (tables `cron_jobs`, `channel_pairing_allow_entries`)
 * and each agent's session windows and transcript events in
 * `agents/<id>/agent/openclaw-agent.sqlite` (`session_windows`, `transcript_events`).
 *
 * Invariant: the source file is never opened by SQLite. Opening a WAL database, even read-only, may
 * create or change its `-shm` file and a checkpoint would rewrite it; so the database and its `-wal`
 * are copied (size-capped, symlinks refused) into a private temporary directory, and that copy is
 * opened. The copy sees every committed row, including those still in the WAL.
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { zstdDecompressSync } from "node:zlib";
import type { SafeTree } from "./safe-tree.js";

/** Largest database file copied (a transcript store of years of chats is far below this). */
export const MAX_DB_BYTES = 1024 * 1024 * 1024;
/** Largest decompressed transcript event (OpenClaw's own check allows 4 MiB). */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/** A read-only snapshot of one OpenClaw database; `close()` removes the copy. */
export class DbSnapshot {
  private constructor(
    readonly db: Database.Database,
    private readonly dir: string,
  ) {}

  /** Copies `rel` (and its `-wal`) out of `tree` and opens the copy; undefined when absent. */
  static open(tree: SafeTree, rel: string): DbSnapshot | undefined {
    if (!tree.isFile(rel)) return undefined;
    const dir = mkdtempSync(join(tmpdir(), "familiar-import-"));
    try {
      writeFileSync(join(dir, "db.sqlite"), tree.read(rel, MAX_DB_BYTES), { mode: 0o600 });
      if (tree.isFile(`${rel}-wal`))
        writeFileSync(join(dir, "db.sqlite-wal"), tree.read(`${rel}-wal`, MAX_DB_BYTES), { mode: 0o600 });
      // Not readonly: SQLite must replay the copied WAL into the copy; the source is untouched.
      const db = new Database(join(dir, "db.sqlite"), { fileMustExist: true });
      db.pragma("query_only = ON");
      return new DbSnapshot(db, dir);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  hasTable(name: string): boolean {
    return (
      this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined
    );
  }

  close(): void {
    this.db.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One OpenClaw cron job as stored (`job_json` parsed). */
export interface OpenClawCronRow {
  id: string;
  name: string;
  enabled: boolean;
  /** Set on jobs OpenClaw manages itself (heartbeat, memory dreaming, skill review). */
  declarationKey: string | null;
  agentId: string | null;
  job: Record<string, unknown>;
}

export function readCronJobs(s: DbSnapshot): OpenClawCronRow[] {
  if (!s.hasTable("cron_jobs")) return [];
  const rows = s.db
    .prepare(
      "SELECT job_id, name, enabled, declaration_key, agent_id, job_json FROM cron_jobs ORDER BY sort_order, updated_at, job_id",
    )
    .all() as {
    job_id: string;
    name: string;
    enabled: number;
    declaration_key: string | null;
    agent_id: string | null;
    job_json: string;
  }[];
  return rows.map((r) => {
    let job: Record<string, unknown> = {};
    try {
      const v: unknown = JSON.parse(r.job_json);
      if (v && typeof v === "object" && !Array.isArray(v)) job = v as Record<string, unknown>;
    } catch {
      /* reported by the planner as a job without a schedule */
    }
    return {
      id: r.job_id,
      name: r.name,
      enabled: r.enabled === 1,
      declarationKey: r.declaration_key || null,
      agentId: r.agent_id || null,
      job,
    };
  });
}

/** Approved DM senders: `{channel, account, entry}` from the pairing store. */
export function readPairingAllow(s: DbSnapshot): { channel: string; account: string; entry: string }[] {
  if (!s.hasTable("channel_pairing_allow_entries")) return [];
  return (
    s.db
      .prepare(
        "SELECT channel_key, account_id, entry FROM channel_pairing_allow_entries ORDER BY channel_key, account_id, sort_order, entry",
      )
      .all() as { channel_key: string; account_id: string; entry: string }[]
  ).map((r) => ({ channel: r.channel_key, account: r.account_id, entry: r.entry }));
}

/** One message of an imported conversation. */
export interface TranscriptMessage {
  role: "user" | "assistant";
  text: string;
  at: number;
}

export interface OpenClawSession {
  id: string;
  key: string;
  createdAt: number;
  updatedAt: number;
  messages: TranscriptMessage[];
}

/** The text of a transcript `message` event's content (string, or text parts). */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: unknown) =>
      p && typeof p === "object" && (p as { type?: unknown }).type === "text"
        ? String((p as { text?: unknown }).text ?? "")
        : "",
    )
    .filter((t) => t !== "")
    .join("\n");
}

/** A transcript event (JSONL line or stored event) as a message, or undefined for other events. */
export function eventMessage(ev: unknown, fallbackAt: number): TranscriptMessage | undefined {
  if (!ev || typeof ev !== "object") return undefined;
  const e = ev as { type?: unknown; timestamp?: unknown; message?: unknown };
  if (e.type !== "message" || !e.message || typeof e.message !== "object") return undefined;
  const m = e.message as { role?: unknown; content?: unknown; timestamp?: unknown };
  if (m.role !== "user" && m.role !== "assistant") return undefined;
  const text = contentText(m.content).trim();
  if (!text) return undefined;
  const at =
    typeof m.timestamp === "number"
      ? m.timestamp
      : typeof e.timestamp === "string" && !Number.isNaN(Date.parse(e.timestamp))
        ? Date.parse(e.timestamp)
        : fallbackAt;
  return { role: m.role, text, at };
}

/** Sessions and their user/assistant messages from an agent database. */
export function readSessions(s: DbSnapshot): { sessions: OpenClawSession[]; unreadable: number } {
  if (!s.hasTable("session_windows") || !s.hasTable("transcript_events"))
    return { sessions: [], unreadable: 0 };
  const windows = s.db
    .prepare(
      "SELECT session_id, session_key, created_at, updated_at FROM session_windows ORDER BY created_at, session_id",
    )
    .all() as { session_id: string; session_key: string; created_at: number; updated_at: number }[];
  const events = s.db.prepare(
    "SELECT event_json, event_zstd, event_utf8_bytes, created_at FROM transcript_events WHERE session_id = ? ORDER BY seq",
  );
  let unreadable = 0;
  const sessions: OpenClawSession[] = [];
  for (const w of windows) {
    const messages: TranscriptMessage[] = [];
    for (const row of events.iterate(w.session_id) as Iterable<{
      event_json: string | null;
      event_zstd: Buffer | null;
      event_utf8_bytes: number | null;
      created_at: number;
    }>) {
      let json = row.event_json;
      if (json === null && row.event_zstd) {
        try {
          json = zstdDecompressSync(row.event_zstd, { maxOutputLength: MAX_EVENT_BYTES }).toString("utf8");
        } catch {
          unreadable++;
          continue;
        }
      }
      if (json === null) continue;
      try {
        const m = eventMessage(JSON.parse(json), row.created_at);
        if (m) messages.push(m);
      } catch {
        unreadable++;
      }
    }
    sessions.push({
      id: w.session_id,
      key: w.session_key,
      createdAt: w.created_at,
      updatedAt: w.updated_at,
      messages,
    });
  }
  return { sessions, unreadable };
}
