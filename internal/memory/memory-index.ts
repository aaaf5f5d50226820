/**
 * The memory index: hybrid search over MEMORY.md, memory/*.md and past transcripts.
 *
 * - Keyword: SQLite FTS5 (bm25, porter stemming, highlighted snippets), always on, works offline.
 * - Meaning: chunk vectors in sqlite-vec (same database), when `memory.embeddings` is configured.
 *   Transcript turns get vectors only with `memory.sessions: true` (they leave the machine to be
 *   embedded); their keyword index is local and always kept.
 * - The two rankings are fused by reciprocal rank fusion with a recency boost (hybrid-rank.ts).
 *
 * Never blocks a turn on embeddings: if the query cannot be embedded (outage, cooldown), keyword
 * hits come back alone; missing chunk vectors are filled in the background (embedding-sync.ts).
 */
import type { Config } from "../config/schema.js";
import { systemClock, type Clock } from "../core/clock.js";
import { silentLogger, type Logger } from "../log/logger.js";
import type { Db } from "../store/db.js";
import { ChunkSync } from "./chunk-sync.js";
import { Embedder, type EmbedCause, type EmbedderHealth, type EmbedderOptions } from "./embedder.js";
import { EmbeddingSync, type FillProgress } from "./embedding-sync.js";
import { reciprocalRankFusion, recencyFactor } from "./hybrid-rank.js";
import { ftsQuery } from "./keyword-query.js";
import { toHit, type ChunkRow, type MemoryHit } from "./memory-hit.js";
import { localDateTime } from "./local-date.js";
import { loadSqliteVec, VectorStore } from "./vector-store.js";

export interface MemorySearchOptions {
  limit?: number;
  sources?: "all" | "files" | "sessions";
  /** Which rankings to use (tests and benchmarks compare them). Default `hybrid`. */
  mode?: "hybrid" | "keyword" | "vector";
  /** The turn that asked (a tool's search), named in the query embedding's ledger row. */
  cause?: EmbedCause;
}

/** What `familiar memory status` shows. */
export interface MemoryStatus {
  files: number;
  chunks: number;
  sessionChunks: number;
  vectors: number;
  pending: number;
  dimensions: number | null;
  embeddings: EmbedderHealth;
  /** Model the stored vectors came from. */
  storedModel: string | null;
  vectorStore: "ok" | string;
  sessions: boolean;
  fill: FillProgress;
}

export interface MemoryIndexOptions {
  config?: () => Config;
  logger?: Logger;
  clock?: Clock;
  /** Records embedding calls in usage (tokens, cost) and checks them against budgets first. */
  onUsage?: EmbedderOptions["onUsage"];
  beforeEmbed?: EmbedderOptions["beforeCall"];
  /** Router-style backoff/cooldown overrides (tests). */
  backoff?: { baseMs?: number; maxMs?: number };
  cooldown?: { baseMs?: number; maxMs?: number };
}

/** Candidates taken from each ranking before fusion. */
const CANDIDATES = 40;
/** Vector hits farther than this (cosine distance) are noise, not meaning. */
const MAX_DISTANCE = 0.8;

export class MemoryIndex {
  readonly embedder: Embedder;
  private readonly chunks: ChunkSync;
  private readonly vectors: VectorStore;
  private readonly fills: EmbeddingSync;
  private readonly config: (() => Config) | undefined;
  private readonly clock: Clock;
  private s;

  constructor(
    private readonly db: Db,
    workspace: () => string,
    opts: MemoryIndexOptions = {},
  ) {
    this.config = opts.config;
    this.clock = opts.clock ?? systemClock;
    const logger = opts.logger ?? silentLogger();
    this.vectors = new VectorStore(db, loadSqliteVec(db));
    this.chunks = new ChunkSync(db, workspace, this.vectors);
    const cfg = opts.config ?? (() => ({ memory: { sessions: false } }) as unknown as Config);
    this.embedder = new Embedder({
      config: cfg,
      logger,
      clock: this.clock,
      ...(opts.onUsage ? { onUsage: opts.onUsage } : {}),
      ...(opts.beforeEmbed ? { beforeCall: opts.beforeEmbed } : {}),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      ...(opts.cooldown ? { cooldown: opts.cooldown } : {}),
    });
    this.fills = new EmbeddingSync(db, cfg, this.embedder, this.vectors, logger, () => this.clock.now());
    this.s = {
      // Ranked ids first (FTS5's rank is a fast top-k); snippets only for the ids kept.
      keyword: db.prepare<[string, string, string, number], { id: number }>(
        `SELECT rowid AS id FROM memory_fts WHERE memory_fts MATCH ? AND source IN (?, ?) ORDER BY rank LIMIT ?`,
      ),
      snippets: db.prepare<[string, string], { id: number; snip: string }>(
        `SELECT rowid AS id, snippet(memory_fts, 0, '**', '**', '…', 24) AS snip FROM memory_fts
         WHERE memory_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))`,
      ),
      meta: db.prepare<[number], Omit<ChunkRow, "body">>(
        `SELECT id, source, ref, message_id, heading, line_start, line_end, day FROM memory_chunks WHERE id = ?`,
      ),
      body: db.prepare<[number], { body: string }>("SELECT body FROM memory_fts WHERE rowid = ?"),
      messageExists: db.prepare<[number], { one: number }>("SELECT 1 AS one FROM messages WHERE id = ?"),
      counts: db.prepare<[], { files: number; chunks: number; sessions: number; vectors: number }>(
        `SELECT (SELECT COUNT(*) FROM memory_files) AS files,
                (SELECT COUNT(*) FROM memory_chunks WHERE source = 'file') AS chunks,
                (SELECT COUNT(*) FROM memory_chunks WHERE source = 'session') AS sessions,
                (SELECT COUNT(*) FROM memory_chunks WHERE embedded = 1) AS vectors`,
      ),
      forgetFiles: db.prepare("DELETE FROM memory_files"),
    };
  }

  private sessionsEmbedded(): boolean {
    return this.config?.().memory.sessions ?? false;
  }

  /** Re-indexes one workspace-relative file if it changed. Returns true if re-chunked. */
  syncFile(rel: string): boolean {
    const changed = this.chunks.syncFile(rel);
    if (changed) void this.fills.fill();
    return changed;
  }

  /** Syncs every memory file and drops files that disappeared. */
  syncFiles(): void {
    this.chunks.syncFiles();
  }

  /** Indexes transcript turns added since the last sync. */
  syncMessages(): number {
    const tz = this.config?.().timezone ?? "UTC";
    // Every UTC offset is a multiple of 15 minutes, so one 15-minute bucket has one local date.
    const days = new Map<number, string>();
    return this.chunks.syncMessages((ms) => {
      const bucket = Math.floor(ms / 900_000);
      let day = days.get(bucket);
      if (day === undefined) days.set(bucket, (day = localDateTime(ms, tz).date));
      return day;
    });
  }

  /** Start-up and config changes: sync files, check the model, fill missing vectors in the background. */
  refresh(): void {
    this.syncFiles();
    if (this.sessionsEmbedded()) this.syncMessages();
    void this.fills.fill();
  }

  /** Re-reads every file and re-embeds every chunk (`familiar memory reindex`). Runs in the background. */
  reindex(): { chunks: number; embedding: boolean } {
    this.s.forgetFiles.run();
    this.syncFiles();
    this.syncMessages();
    const n = this.embedder.enabled() ? this.fills.resetAll() : 0;
    void this.fills.fill();
    return { chunks: n, embedding: this.embedder.enabled() && !this.vectors.unavailable() };
  }

  /** Resolves when the running vector fill (if any) ends; starts one if vectors are missing. */
  settle(): Promise<void> {
    return this.fills.fill();
  }

  status(): MemoryStatus {
    const c = this.s.counts.get();
    return {
      files: c?.files ?? 0,
      chunks: c?.chunks ?? 0,
      sessionChunks: c?.sessions ?? 0,
      vectors: c?.vectors ?? 0,
      pending: this.embedder.enabled() ? this.fills.pendingCount() : 0,
      dimensions: this.vectors.dimension() ?? null,
      embeddings: this.embedder.health(),
      storedModel: this.fills.storedModel() ?? null,
      vectorStore: this.vectors.unavailable()
        ? `sqlite-vec did not load: ${this.vectors.unavailable()}`
        : "ok",
      sessions: this.sessionsEmbedded(),
      fill: this.fills.progress(),
    };
  }

  /** Stops the background fill. */
  close(): Promise<void> {
    return this.fills.close();
  }

  /** Keyword ranking: all words first, then any word; ids best first (their snippets into `snippets`). */
  private keyword(query: string, a: string, b: string, snippets: Map<number, string>): number[] {
    const ids: number[] = [];
    const seen = new Set<number>();
    for (const op of ["AND", "OR"] as const) {
      const q = ftsQuery(query, op);
      if (!q) return ids;
      for (const r of this.s.keyword.all(q, a, b, CANDIDATES))
        if (!seen.has(r.id)) {
          seen.add(r.id);
          ids.push(r.id);
        }
      if (ids.length >= CANDIDATES) break;
    }
    const any = ftsQuery(query, "OR");
    if (any && ids.length > 0)
      for (const r of this.s.snippets.all(any, JSON.stringify(ids))) snippets.set(r.id, r.snip);
    return ids;
  }

  /** Vector ranking, or [] when embeddings are off, down, or still missing. Never throws. */
  private async vector(
    query: string,
    sources: "all" | "files" | "sessions",
    cause?: EmbedCause,
  ): Promise<number[]> {
    if (!this.embedder.enabled() || this.vectors.unavailable() || this.embedder.coolingDown()) return [];
    if (sources === "sessions" && !this.sessionsEmbedded()) return [];
    // A few new chunks (a note just written) are embedded before answering; a big backlog is not.
    const batch = this.config?.().memory.embeddings?.batch_size ?? 64;
    const fill = this.fills.fill();
    if (this.fills.pendingCount() <= batch) await fill;
    try {
      const [q] = await this.embedder.embed([query], undefined, "search", cause);
      if (!q) return [];
      const source = sources === "files" ? "file" : sources === "sessions" ? "session" : undefined;
      return this.vectors
        .nearest(q, CANDIDATES, source)
        .filter((h) => h.distance <= MAX_DISTANCE)
        .map((h) => h.id);
    } catch {
      return []; // the embedder warned once; keyword hits still answer
    }
  }

  /** Hybrid search; brings files (and transcripts) up to date first. */
  async search(query: string, opts: MemorySearchOptions = {}): Promise<MemoryHit[]> {
    const sources = opts.sources ?? "all";
    const mode = opts.mode ?? "hybrid";
    if (sources !== "sessions") this.syncFiles();
    if (sources !== "files") this.syncMessages();
    const limit = Math.min(Math.max(opts.limit ?? 8, 1), 50);
    const [a, b] =
      sources === "files"
        ? ["file", "file"]
        : sources === "sessions"
          ? ["session", "session"]
          : ["file", "session"];
    const snippets = new Map<number, string>();
    const kw = mode === "vector" ? [] : this.keyword(query, a, b, snippets);
    const vec = mode === "keyword" ? [] : await this.vector(query, sources, opts.cause);
    const halfLife = this.config?.().memory.recency_half_life_days ?? 30;
    const now = this.clock.now();
    const fused = reciprocalRankFusion(kw, vec);
    const scored: { row: Omit<ChunkRow, "body">; f: (typeof fused)[number]; score: number }[] = [];
    for (const f of fused) {
      const row = this.s.meta.get(f.id);
      if (!row) continue;
      scored.push({ row, f, score: f.score * recencyFactor(row.day, now, halfLife) });
    }
    scored.sort((x, y) => y.score - x.score);
    const hits: MemoryHit[] = [];
    for (const { row, f, score } of scored) {
      if (hits.length >= limit) break;
      if (row.source === "session" && row.message_id !== null && !this.s.messageExists.get(row.message_id)) {
        this.chunks.pruneMessage(row.id);
        continue;
      }
      const body = this.s.body.get(row.id)?.body ?? "";
      hits.push(toHit({ ...row, body }, f, snippets.get(row.id), score));
    }
    return hits;
  }
}

export { ftsQuery } from "./keyword-query.js";
export type { MemoryHit } from "./memory-hit.js";
export { chunkMarkdown } from "./chunk-markdown.js";
