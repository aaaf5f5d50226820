/**
 * Memory search index: SQLite FTS5 (bm25 ranking, snippets) over MEMORY.md, memory/*.md and past
 * session transcripts.
 *
 * Kept up to date incrementally, never rebuilt:
 * - files: each search (and each write through memory_write) stats the memory files; a file whose
 *   mtime or size changed is hashed, and re-chunked only if the hash changed; removed files are dropped;
 * - messages: rows of the core `messages` table with an id above the last synced id are indexed in
 *   batches; rows deleted since (session deletion cascades) are pruned when they show up in results.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Db } from "../store/db.js";

/** One search hit. */
export interface MemoryHit {
  source: "file" | "session";
  /** Workspace-relative file path, or `session <key>` for transcripts. */
  where: string;
  line?: number;
  title: string;
  snippet: string;
  score: number;
}

export interface MemorySearchOptions {
  limit?: number;
  sources?: "all" | "files" | "sessions";
}

const CHUNK_CHARS = 1200;
const SYNC_BATCH = 2000;

interface Chunk {
  body: string;
  title: string;
  line: number;
}

/** Splits markdown into paragraph-aligned chunks, each titled with its nearest heading. */
export function chunkMarkdown(text: string): Chunk[] {
  const lines = text.split("\n");
  const out: Chunk[] = [];
  let title = "";
  let buf: string[] = [];
  let start = 1;
  const flush = (): void => {
    const body = buf.join("\n").trim();
    if (body) out.push({ body, title, line: start });
    buf = [];
  };
  lines.forEach((l, i) => {
    const heading = /^#{1,6}\s+(.*)$/.exec(l);
    if (heading) {
      flush();
      title = heading[1]?.trim() ?? "";
      start = i + 2;
      return;
    }
    // A chunk starts at its first non-blank line (so `path:line` points at the text).
    if (buf.every((b) => b.trim() === "")) {
      if (l.trim() === "") return;
      buf = [];
      start = i + 1;
    }
    buf.push(l);
    if (l.trim() === "" && buf.join("\n").length >= CHUNK_CHARS) flush();
  });
  flush();
  return out;
}

/** Builds an FTS5 MATCH expression from free text (each word quoted, so no syntax errors). */
export function ftsQuery(text: string, op: "AND" | "OR"): string | undefined {
  const words = text.match(/[\p{L}\p{N}_]+/gu)?.slice(0, 24) ?? [];
  if (words.length === 0) return undefined;
  return words.map((w) => `"${w.replace(/"/g, "")}"`).join(` ${op} `);
}

export class MemoryIndex {
  private stmts;

  constructor(
    private db: Db,
    private workspace: () => string,
  ) {
    this.stmts = {
      fileRow: db.prepare<[string], { mtime_ms: number; size: number; hash: string }>(
        "SELECT mtime_ms, size, hash FROM memory_files WHERE path = ?",
      ),
      allFiles: db.prepare<[], { path: string }>("SELECT path FROM memory_files"),
      upsertFile: db.prepare(
        `INSERT INTO memory_files (path, mtime_ms, size, hash) VALUES (?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET mtime_ms = excluded.mtime_ms, size = excluded.size, hash = excluded.hash`,
      ),
      deleteFile: db.prepare("DELETE FROM memory_files WHERE path = ?"),
      deleteChunks: db.prepare("DELETE FROM memory_fts WHERE source = 'file' AND ref = ?"),
      insertChunk: db.prepare(
        "INSERT INTO memory_fts (body, title, source, ref, line) VALUES (?, ?, ?, ?, ?)",
      ),
      getState: db.prepare<[string], { value: number }>("SELECT value FROM memory_state WHERE key = ?"),
      setState: db.prepare(
        "INSERT INTO memory_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      ),
      newMessages: db.prepare<
        [number, number],
        { id: number; role: string; content: string; created_at: number; key: string }
      >(
        `SELECT m.id, m.role, m.content, m.created_at, s.key FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.id > ? ORDER BY m.id LIMIT ?`,
      ),
      messageExists: db.prepare<[number], { one: number }>("SELECT 1 AS one FROM messages WHERE id = ?"),
      deleteMessage: db.prepare("DELETE FROM memory_fts WHERE source = 'session' AND ref = ?"),
      search: db.prepare<
        [string, string, string, number],
        {
          rowid: number;
          title: string;
          source: string;
          ref: string;
          line: number | null;
          snip: string;
          score: number;
        }
      >(
        `SELECT rowid, title, source, ref, line, snippet(memory_fts, 0, '**', '**', '…', 16) AS snip,
                bm25(memory_fts) AS score
         FROM memory_fts WHERE memory_fts MATCH ? AND (source = ? OR source = ?)
         ORDER BY score LIMIT ?`,
      ),
    };
  }

  /** The memory files of the workspace, relative paths: MEMORY.md and memory/*.md. */
  private listFiles(): string[] {
    const root = resolve(this.workspace());
    const out: string[] = [];
    for (const name of ["MEMORY.md", "memory.md"]) {
      try {
        if (statSync(join(root, name)).isFile()) {
          out.push(name);
          break;
        }
      } catch {
        /* absent */
      }
    }
    try {
      for (const e of readdirSync(join(root, "memory"), { withFileTypes: true }))
        if (e.isFile() && e.name.endsWith(".md")) out.push(`memory/${e.name}`);
    } catch {
      /* no memory folder yet */
    }
    return out;
  }

  /** Re-indexes one workspace-relative file if it changed (or drops it if gone). Returns true if re-chunked. */
  syncFile(rel: string): boolean {
    const abs = join(resolve(this.workspace()), rel);
    let st;
    try {
      st = statSync(abs);
    } catch {
      this.db.transaction(() => {
        this.stmts.deleteChunks.run(rel);
        this.stmts.deleteFile.run(rel);
      })();
      return false;
    }
    const row = this.stmts.fileRow.get(rel);
    if (row && row.mtime_ms === Math.floor(st.mtimeMs) && row.size === st.size) return false;
    const text = readFileSync(abs, "utf8");
    const hash = createHash("sha256").update(text).digest("hex");
    if (row && row.hash === hash) {
      this.stmts.upsertFile.run(rel, Math.floor(st.mtimeMs), st.size, hash);
      return false;
    }
    this.db.transaction(() => {
      this.stmts.deleteChunks.run(rel);
      for (const c of chunkMarkdown(text)) this.stmts.insertChunk.run(c.body, c.title, "file", rel, c.line);
      this.stmts.upsertFile.run(rel, Math.floor(st.mtimeMs), st.size, hash);
    })();
    return true;
  }

  /** Syncs every memory file and drops files that disappeared. */
  syncFiles(): void {
    const current = new Set(this.listFiles());
    for (const rel of current) this.syncFile(rel);
    for (const { path } of this.stmts.allFiles.all()) if (!current.has(path)) this.syncFile(path);
  }

  /** Indexes messages added since the last sync. Returns how many rows were indexed. */
  syncMessages(): number {
    let last = this.stmts.getState.get("last_message_id")?.value ?? 0;
    let n = 0;
    for (;;) {
      const rows = this.stmts.newMessages.all(last, SYNC_BATCH);
      if (rows.length === 0) break;
      this.db.transaction(() => {
        for (const r of rows) {
          if ((r.role === "user" || r.role === "assistant") && r.content.trim()) {
            const day = new Date(r.created_at).toISOString().slice(0, 10);
            this.stmts.insertChunk.run(r.content, `${r.key} ${day} ${r.role}`, "session", String(r.id), null);
            n++;
          }
          last = r.id;
        }
        this.stmts.setState.run("last_message_id", last);
      })();
      if (rows.length < SYNC_BATCH) break;
    }
    return n;
  }

  /** Brings files and transcripts up to date, then searches (AND of words, falling back to OR). */
  search(query: string, opts: MemorySearchOptions = {}): MemoryHit[] {
    const sources = opts.sources ?? "all";
    if (sources !== "sessions") this.syncFiles();
    if (sources !== "files") this.syncMessages();
    const limit = Math.min(Math.max(opts.limit ?? 8, 1), 50);
    const [a, b] =
      sources === "files"
        ? ["file", "file"]
        : sources === "sessions"
          ? ["session", "session"]
          : ["file", "session"];
    for (const op of ["AND", "OR"] as const) {
      const q = ftsQuery(query, op);
      if (!q) return [];
      const hits: MemoryHit[] = [];
      for (const r of this.stmts.search.all(q, a, b, limit + 5)) {
        if (r.source === "session" && !this.stmts.messageExists.get(Number(r.ref))) {
          this.stmts.deleteMessage.run(r.ref);
          continue;
        }
        hits.push({
          source: r.source === "session" ? "session" : "file",
          where: r.source === "session" ? `session ${r.title}` : r.ref,
          ...(r.line !== null ? { line: r.line } : {}),
          title: r.source === "session" ? "" : r.title,
          snippet: r.snip.replace(/\s+/g, " ").trim(),
          score: r.score,
        });
        if (hits.length >= limit) break;
      }
      if (hits.length > 0 || op === "OR") return hits;
    }
    return [];
  }
}
