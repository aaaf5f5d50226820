/**
 * Chunk vectors in a sqlite-vec `vec0` table (`memory_vec`) in the same database (and transactions)
 * as the FTS index. The table's dimension is fixed at creation, so it is created on the first vectors
 * and dropped when the embedding model changes. Distance is cosine.
 *
 * sqlite-vec is a loadable extension (prebuilt for Linux, macOS, Windows); when it cannot load here,
 * the index works with keyword search only and says why in `familiar memory status`.
 */
import { createRequire } from "node:module";
import type { Db } from "../store/db.js";

/** One nearest neighbour. */
export interface VectorHit {
  id: number;
  distance: number;
}

/** Loads sqlite-vec into the connection; returns the error text when it cannot load. */
export function loadSqliteVec(db: Db): string | undefined {
  try {
    // createRequire: sqlite-vec finds its platform package relative to itself (kept external in the bundle).
    const vec = createRequire(import.meta.url)("sqlite-vec") as { load(db: Db): void };
    vec.load(db);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The vec0 table of chunk vectors. */
export class VectorStore {
  private dims: number | undefined;

  constructor(
    private readonly db: Db,
    private readonly loadError: string | undefined,
  ) {
    this.dims = this.readDims();
  }

  /** Why vectors are unavailable (sqlite-vec did not load), or undefined. */
  unavailable(): string | undefined {
    return this.loadError;
  }

  /** Dimension of the stored vectors, or undefined before the first vector. */
  dimension(): number | undefined {
    return this.dims;
  }

  private readDims(): number | undefined {
    const row = this.db
      .prepare<[], { sql: string }>("SELECT sql FROM sqlite_master WHERE name = 'memory_vec'")
      .get();
    const m = row ? /float\[(\d+)\]/.exec(row.sql) : null;
    return m?.[1] ? Number(m[1]) : undefined;
  }

  /** Drops every vector (model change); the next {@link put} recreates the table. */
  drop(): void {
    if (this.loadError) return;
    this.db.exec("DROP TABLE IF EXISTS memory_vec");
    this.dims = undefined;
  }

  /** Stores vectors (call inside the caller's transaction). Creates the table on first use. */
  put(rows: { id: number; source: string; vector: Float32Array }[]): void {
    if (this.loadError || rows.length === 0) return;
    const dims = rows[0]?.vector.length ?? 0;
    if (this.dims === undefined) {
      this.db.exec(
        `CREATE VIRTUAL TABLE IF NOT EXISTS memory_vec USING vec0(
           chunk_id INTEGER PRIMARY KEY, source TEXT, embedding float[${dims}] distance_metric=cosine)`,
      );
      this.dims = dims;
    }
    const del = this.db.prepare("DELETE FROM memory_vec WHERE chunk_id = ?");
    const ins = this.db.prepare("INSERT INTO memory_vec (chunk_id, source, embedding) VALUES (?, ?, ?)");
    for (const r of rows) {
      if (r.vector.length !== this.dims)
        throw new Error(`embedding has ${r.vector.length} dimensions, the index ${this.dims}`);
      del.run(BigInt(r.id));
      ins.run(BigInt(r.id), r.source, r.vector);
    }
  }

  /** Removes the vectors of deleted chunks (call inside the caller's transaction). */
  remove(ids: number[]): void {
    if (this.loadError || this.dims === undefined || ids.length === 0) return;
    const del = this.db.prepare("DELETE FROM memory_vec WHERE chunk_id = ?");
    for (const id of ids) del.run(BigInt(id));
  }

  /** The `k` nearest chunks, optionally of one source. */
  nearest(query: Float32Array, k: number, source?: "file" | "session"): VectorHit[] {
    if (this.loadError || this.dims === undefined || query.length !== this.dims) return [];
    const sql = `SELECT chunk_id AS id, distance FROM memory_vec WHERE embedding MATCH ? AND k = ?${
      source ? " AND source = ?" : ""
    } ORDER BY distance`;
    const args: unknown[] = [query, k];
    if (source) args.push(source);
    return this.db.prepare<unknown[], VectorHit>(sql).all(...args);
  }
}
