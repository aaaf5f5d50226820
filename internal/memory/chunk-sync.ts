/**
 * Keeps `memory_chunks` + `memory_fts` (+ vector removal) in step with the memory files and the
 * transcripts, incrementally:
 * - a file whose mtime or size changed is hashed, and re-chunked only when its hash changed; a new
 *   chunk whose content hash equals one of the file's old chunks keeps that row (and its vector), so
 *   an edit re-embeds only the chunks whose text changed;
 * - transcript rows (user and assistant text, no tool noise) above the last synced message id are
 *   added in batches; rows of deleted sessions are pruned when they show up in results.
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import type { Db } from "../store/db.js";
import { reportRefusal } from "../workspace/refusal-log.js";
import {
  listWorkspaceDirSync,
  readWorkspaceFileSync,
  statWorkspaceFileSync,
} from "../workspace/workspace-door.js";
import { chunkHash, chunkMarkdown } from "./chunk-markdown.js";
import type { VectorStore } from "./vector-store.js";

const SYNC_BATCH = 2000;
/** A memory file bigger than this is not indexed (refused by the door, logged once). */
const MAX_INDEXED_BYTES = 8 * 1024 * 1024;
/** A daily note's date comes from its name: memory/YYYY-MM-DD.md (any suffix after the date). */
const DAILY = /^memory\/(\d{4}-\d{2}-\d{2})/;

export class ChunkSync {
  private s;

  constructor(
    private readonly db: Db,
    private readonly workspace: () => string,
    private readonly vectors: VectorStore,
  ) {
    this.s = {
      fileRow: db.prepare<[string], { mtime_ms: number; size: number; hash: string }>(
        "SELECT mtime_ms, size, hash FROM memory_files WHERE path = ?",
      ),
      allFiles: db.prepare<[], { path: string }>("SELECT path FROM memory_files"),
      upsertFile: db.prepare(
        `INSERT INTO memory_files (path, mtime_ms, size, hash) VALUES (?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET mtime_ms = excluded.mtime_ms, size = excluded.size, hash = excluded.hash`,
      ),
      deleteFile: db.prepare("DELETE FROM memory_files WHERE path = ?"),
      chunksOf: db.prepare<[string], { id: number; hash: string }>(
        "SELECT id, hash FROM memory_chunks WHERE source = 'file' AND ref = ?",
      ),
      insertChunk: db.prepare<
        [string, string, number | null, string, number | null, number | null, string | null, string]
      >(
        `INSERT INTO memory_chunks (source, ref, message_id, heading, line_start, line_end, day, hash)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      moveChunk: db.prepare("UPDATE memory_chunks SET line_start = ?, line_end = ?, day = ? WHERE id = ?"),
      deleteChunk: db.prepare("DELETE FROM memory_chunks WHERE id = ?"),
      insertFts: db.prepare("INSERT INTO memory_fts (rowid, body, heading, source) VALUES (?, ?, ?, ?)"),
      deleteFts: db.prepare("DELETE FROM memory_fts WHERE rowid = ?"),
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
    };
  }

  /**
   * The memory files of the workspace, relative paths: MEMORY.md and memory/*.md. Read through the
   * workspace door: a symlinked MEMORY.md, memory/ or note is not indexed (memory_search would return
   * the link target's lines), and the refusal is logged once.
   */
  listFiles(): string[] {
    const root = resolve(this.workspace());
    const out: string[] = [];
    for (const name of ["MEMORY.md", "memory.md"]) {
      try {
        if (statWorkspaceFileSync(root, name)) {
          out.push(name);
          break;
        }
      } catch (err) {
        if (!reportRefusal(err, "memory index")) throw err;
      }
    }
    try {
      for (const e of listWorkspaceDirSync(root, "memory"))
        if (e.kind === "file" && e.name.endsWith(".md")) out.push(`memory/${e.name}`);
    } catch (err) {
      if (!reportRefusal(err, "memory index")) throw err;
    }
    return out;
  }

  private removeChunks(ids: number[]): void {
    for (const id of ids) {
      this.s.deleteFts.run(id);
      this.s.deleteChunk.run(id);
    }
    this.vectors.remove(ids);
  }

  /** Re-indexes one workspace-relative file if it changed (or drops it if gone). True if re-chunked. */
  syncFile(rel: string): boolean {
    const root = resolve(this.workspace());
    let st: { mtimeMs: number; size: number } | undefined;
    try {
      st = statWorkspaceFileSync(root, rel);
    } catch (err) {
      // A link or a non-regular file is dropped from the index like a missing one.
      if (!reportRefusal(err, "memory index")) throw err;
      st = undefined;
    }
    if (!st) {
      this.db.transaction(() => {
        this.removeChunks(this.s.chunksOf.all(rel).map((c) => c.id));
        this.s.deleteFile.run(rel);
      })();
      return false;
    }
    const row = this.s.fileRow.get(rel);
    if (row && row.mtime_ms === Math.floor(st.mtimeMs) && row.size === st.size) return false;
    let file;
    try {
      file = readWorkspaceFileSync(root, rel, { maxBytes: MAX_INDEXED_BYTES });
    } catch (err) {
      if (!reportRefusal(err, "memory index")) throw err;
      file = undefined;
    }
    if (!file) {
      this.db.transaction(() => {
        this.removeChunks(this.s.chunksOf.all(rel).map((c) => c.id));
        this.s.deleteFile.run(rel);
      })();
      return false;
    }
    const text = file.text;
    const hash = createHash("sha256").update(text).digest("hex");
    if (row && row.hash === hash) {
      this.s.upsertFile.run(rel, Math.floor(st.mtimeMs), st.size, hash);
      return false;
    }
    const day = DAILY.exec(rel)?.[1] ?? null;
    this.db.transaction(() => {
      // Old chunks by content hash: an unchanged chunk keeps its row, FTS entry and vector.
      const old = new Map<string, number[]>();
      for (const c of this.s.chunksOf.all(rel)) old.set(c.hash, [...(old.get(c.hash) ?? []), c.id]);
      for (const c of chunkMarkdown(text)) {
        const h = chunkHash(c.heading, c.text);
        const kept = old.get(h)?.shift();
        if (kept !== undefined) {
          this.s.moveChunk.run(c.lineStart, c.lineEnd, day, kept);
          continue;
        }
        const id = Number(
          this.s.insertChunk.run("file", rel, null, c.heading, c.lineStart, c.lineEnd, day, h)
            .lastInsertRowid,
        );
        this.s.insertFts.run(id, c.text, c.heading, "file");
      }
      this.removeChunks([...old.values()].flat());
      this.s.upsertFile.run(rel, Math.floor(st.mtimeMs), st.size, hash);
    })();
    return true;
  }

  /** Syncs every memory file and drops files that disappeared. */
  syncFiles(): void {
    const current = new Set(this.listFiles());
    for (const rel of current) this.syncFile(rel);
    for (const { path } of this.s.allFiles.all()) if (!current.has(path)) this.syncFile(path);
  }

  /** Indexes transcript turns added since the last sync. Returns how many turns were indexed. */
  syncMessages(dayOf: (ms: number) => string): number {
    let last = this.s.getState.get("last_message_id")?.value ?? 0;
    let n = 0;
    for (;;) {
      const rows = this.s.newMessages.all(last, SYNC_BATCH);
      if (rows.length === 0) break;
      this.db.transaction(() => {
        for (const r of rows) {
          if ((r.role === "user" || r.role === "assistant") && r.content.trim()) {
            const day = dayOf(r.created_at);
            const heading = `${r.key} ${day} ${r.role}`;
            const id = Number(
              this.s.insertChunk.run(
                "session",
                r.key,
                r.id,
                heading,
                null,
                null,
                day,
                chunkHash(heading, r.content),
              ).lastInsertRowid,
            );
            this.s.insertFts.run(id, r.content, "", "session");
            n++;
          }
          last = r.id;
        }
        this.s.setState.run("last_message_id", last);
      })();
      if (rows.length < SYNC_BATCH) break;
    }
    return n;
  }

  /** Drops the chunk of a transcript row that no longer exists. */
  pruneMessage(chunkId: number): void {
    this.db.transaction(() => this.removeChunks([chunkId]))();
  }
}
