/**
 * Fills in chunk vectors in the background: chunks with `embedded = 0` (new or changed text, or all
 * of them after a model change) are embedded in batches of `memory.embeddings.batch_size` and stored
 * in the same transaction that marks them done. One fill runs at a time; an embedding failure stops
 * the run (the embedder cools down) and the next search or config change starts it again, so missing
 * vectors are filled in once the provider is back.
 *
 * The model's identity (provider, base URL, model, dimensions) is kept in `memory_meta`; when it
 * changes, every vector is dropped and the whole index is rebuilt, with progress in the log and in
 * {@link EmbeddingSync.progress} (shown by `familiar memory status`).
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import type { Db } from "../store/db.js";
import { embedText } from "./chunk-markdown.js";
import { embeddingFingerprint, type Embedder } from "./embedder.js";
import type { VectorStore } from "./vector-store.js";

/** Progress of the running rebuild or fill. */
export interface FillProgress {
  running: boolean;
  /** True when the current run re-embeds the whole index (model change or reindex). */
  rebuild: boolean;
  done: number;
  total: number;
  startedAt?: number;
}

interface PendingRow {
  id: number;
  source: string;
  heading: string;
  body: string;
}

export class EmbeddingSync {
  private running: Promise<void> | undefined;
  private abort = new AbortController();
  private prog: FillProgress = { running: false, rebuild: false, done: 0, total: 0 };
  private rebuildPending = false;
  private s;

  constructor(
    private readonly db: Db,
    private readonly config: () => Config,
    private readonly embedder: Embedder,
    private readonly vectors: VectorStore,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {
    this.s = {
      getMeta: db.prepare<[string], { value: string }>("SELECT value FROM memory_meta WHERE key = ?"),
      setMeta: db.prepare(
        "INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      ),
      resetAll: db.prepare("UPDATE memory_chunks SET embedded = 0"),
      pendingCount: db.prepare<[number], { n: number }>(
        "SELECT COUNT(*) AS n FROM memory_chunks WHERE embedded = 0 AND (source = 'file' OR ? = 1)",
      ),
      pending: db.prepare<[number, number, number], PendingRow>(
        `SELECT c.id, c.source, c.heading, f.body FROM memory_chunks c JOIN memory_fts f ON f.rowid = c.id
         WHERE c.embedded = 0 AND (c.source = 'file' OR ? = 1) AND c.id > ? ORDER BY c.id LIMIT ?`,
      ),
      markDone: db.prepare("UPDATE memory_chunks SET embedded = 1 WHERE id = ?"),
    };
  }

  /** Chunks still waiting for a vector (transcript turns only when `memory.sessions` is on). */
  pendingCount(): number {
    return this.s.pendingCount.get(this.config().memory.sessions ? 1 : 0)?.n ?? 0;
  }

  progress(): FillProgress {
    return { ...this.prog };
  }

  /** The model the stored vectors were made with (`<provider>/<model>`), if any. */
  storedModel(): string | undefined {
    return this.s.getMeta.get("embedding_model")?.value;
  }

  /**
   * Drops the vectors when the configured model differs from the one that made them. Returns true
   * when a rebuild is needed. Off (no embeddings configured) keeps the old vectors for a later return.
   */
  checkModel(): boolean {
    const fp = embeddingFingerprint(this.config());
    if (fp === undefined || this.vectors.unavailable()) return false;
    const stored = this.s.getMeta.get("embedding_fingerprint")?.value;
    if (stored === fp) return false;
    const n = this.db.transaction(() => {
      this.vectors.drop();
      const changed = this.s.resetAll.run().changes;
      this.s.setMeta.run("embedding_fingerprint", fp);
      this.s.setMeta.run("embedding_model", this.embedder.modelRef() ?? "");
      return changed;
    })();
    if (stored !== undefined || n > 0)
      this.logger.info(
        { module: "memory", model: this.embedder.modelRef(), chunks: n },
        stored === undefined
          ? `memory index: embedding ${n} chunks with ${this.embedder.modelRef()} in the background`
          : `memory index: embedding model changed to ${this.embedder.modelRef()}; rebuilding ${n} chunks in the background`,
      );
    this.rebuildPending = true;
    return true;
  }

  /** Forgets every vector and embeds everything again (`familiar memory reindex`). */
  resetAll(): number {
    if (this.vectors.unavailable()) return 0;
    const n = this.db.transaction(() => {
      this.vectors.drop();
      return this.s.resetAll.run().changes;
    })();
    this.rebuildPending = true;
    return n;
  }

  /** Starts a fill unless one is running; resolves when that run ends. Never rejects. */
  fill(): Promise<void> {
    if (this.running) return this.running;
    if (!this.embedder.enabled() || this.vectors.unavailable() || this.embedder.coolingDown())
      return Promise.resolve();
    this.checkModel();
    if (this.pendingCount() === 0) {
      this.rebuildPending = false;
      return Promise.resolve();
    }
    this.running = this.run().finally(() => {
      this.running = undefined;
      this.prog = { ...this.prog, running: false };
    });
    return this.running;
  }

  private async run(): Promise<void> {
    const rebuild = this.rebuildPending;
    this.rebuildPending = false;
    const total = this.pendingCount();
    this.prog = { running: true, rebuild, done: 0, total, startedAt: this.now() };
    let after = 0;
    let lastLogged = 0;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const cfg = this.config();
      const e = cfg.memory.embeddings;
      if (!e) return;
      const rows = this.s.pending.all(cfg.memory.sessions ? 1 : 0, after, e.batch_size);
      if (rows.length === 0) break;
      let vecs: Float32Array[];
      // One signal per batch: the SDK leaves a listener on the signal it is given.
      const batch = new AbortController();
      const stop = (): void => batch.abort();
      signal.addEventListener("abort", stop, { once: true });
      try {
        vecs = await this.embedder.embed(
          // A transcript turn's heading is bookkeeping (session key, role), not meaning.
          rows.map((r) => (r.source === "session" ? r.body : embedText(r.heading, r.body))),
          batch.signal,
        );
      } catch (err) {
        // The embedder logged the outage once; the rest is filled in on a later run.
        this.logger.debug({ module: "memory", err: (err as Error).message }, "memory embedding paused");
        return;
      } finally {
        signal.removeEventListener("abort", stop);
      }
      if (signal.aborted) return;
      // A model change while this batch was in flight: its vectors belong to the old model.
      if (embeddingFingerprint(this.config()) !== this.s.getMeta.get("embedding_fingerprint")?.value) return;
      this.db.transaction(() => {
        this.vectors.put(
          rows.map((r, i) => ({ id: r.id, source: r.source, vector: vecs[i] as Float32Array })),
        );
        for (const r of rows) this.s.markDone.run(r.id);
      })();
      after = rows.at(-1)?.id ?? after;
      this.prog.done += rows.length;
      if (rebuild && (this.prog.done - lastLogged >= 500 || this.prog.done >= total)) {
        lastLogged = this.prog.done;
        this.logger.info(
          { module: "memory", done: this.prog.done, total },
          `memory index: embedded ${this.prog.done}/${total} chunks`,
        );
      }
    }
  }

  /** Stops a running fill (shutdown); waits for the batch in flight to settle. */
  async close(): Promise<void> {
    this.abort.abort();
    await this.running;
    this.abort = new AbortController();
  }
}
