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

/** Sign bits of a vector (bit i = component i > 0), LSB first, zero-padded to whole bytes. */
export function binaryQuantize(v: Float32Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(v.length / 8));
  for (let i = 0; i < v.length; i++) if ((v[i] ?? 0) > 0) out[i >> 3] = (out[i >> 3] ?? 0) | (1 << (i & 7));
  return out;
}

/** A Float32Array over a blob (copied when SQLite's buffer is not 4-byte aligned). */
function toF32(b: Buffer): Float32Array {
  if (b.byteOffset % 4 === 0) return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  return new Float32Array(new Uint8Array(b).buffer);
}

function cosineDistance(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 1 : 1 - dot / Math.sqrt(na * nb);
}

/**
 * Chunk vectors, searched in two stages so 10,000+ chunks stay well under 20 ms:
 * 1. a sqlite-vec `vec0` table of sign bits (`bit[N]`, hamming distance: 1/32 of the float data)
 *    picks the nearest `max(100, 2k)` candidates;
 * 2. those are rescored exactly (cosine) from the full float vectors in `memory_vectors`.
 * With fewer chunks than candidates the result is exact. Both tables are created on the first
 * vectors (the dimension is known then) and dropped together when the model changes.
 */
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
      .prepare<[], { sql: string }>("SELECT sql FROM sqlite_master WHERE name = 'memory_vectors'")
      .get();
    const m = row ? /dims:(\d+)/.exec(row.sql) : null;
    return m?.[1] ? Number(m[1]) : undefined;
  }

  /** Drops every vector (model change); the next {@link put} recreates the tables. */
  drop(): void {
    if (this.loadError) return;
    this.db.exec("DROP TABLE IF EXISTS memory_vec; DROP TABLE IF EXISTS memory_vectors");
    this.dims = undefined;
  }

  /** Stores vectors (call inside the caller's transaction). Creates the tables on first use. */
  put(rows: { id: number; source: string; vector: Float32Array }[]): void {
    if (this.loadError || rows.length === 0) return;
    const dims = rows[0]?.vector.length ?? 0;
    if (this.dims === undefined) {
      const bits = Math.ceil(dims / 8) * 8;
      // The dimension is kept in a comment of the table's SQL (sqlite_master keeps it verbatim).
      this.db.exec(
        `CREATE VIRTUAL TABLE IF NOT EXISTS memory_vec USING vec0(
           chunk_id INTEGER PRIMARY KEY, source TEXT, embedding bit[${bits}]);
         CREATE TABLE IF NOT EXISTS memory_vectors (
           chunk_id INTEGER PRIMARY KEY, -- dims:${dims}
           vector BLOB NOT NULL)`,
      );
      this.dims = dims;
    }
    const del = this.db.prepare("DELETE FROM memory_vec WHERE chunk_id = ?");
    const ins = this.db.prepare(
      "INSERT INTO memory_vec (chunk_id, source, embedding) VALUES (?, ?, vec_bit(?))",
    );
    const full = this.db.prepare(
      "INSERT INTO memory_vectors (chunk_id, vector) VALUES (?, ?) ON CONFLICT(chunk_id) DO UPDATE SET vector = excluded.vector",
    );
    for (const r of rows) {
      if (r.vector.length !== this.dims)
        throw new Error(`embedding has ${r.vector.length} dimensions, the index ${this.dims}`);
      del.run(BigInt(r.id));
      ins.run(BigInt(r.id), r.source, binaryQuantize(r.vector));
      full.run(r.id, Buffer.from(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength));
    }
  }

  /** Removes the vectors of deleted chunks (call inside the caller's transaction). */
  remove(ids: number[]): void {
    if (this.loadError || this.dims === undefined || ids.length === 0) return;
    const del = this.db.prepare("DELETE FROM memory_vec WHERE chunk_id = ?");
    const delFull = this.db.prepare("DELETE FROM memory_vectors WHERE chunk_id = ?");
    for (const id of ids) {
      del.run(BigInt(id));
      delFull.run(id);
    }
  }

  /** The `k` nearest chunks by cosine distance, optionally of one source. */
  nearest(query: Float32Array, k: number, source?: "file" | "session"): VectorHit[] {
    if (this.loadError || this.dims === undefined || query.length !== this.dims) return [];
    // sqlite-vec's KNN cost grows fast with k (200 costs 3-4x 100), so the coarse stage stays small.
    const candidates = Math.min(4096, Math.max(100, k * 2));
    const sql = `SELECT chunk_id AS id FROM memory_vec WHERE embedding MATCH vec_bit(?) AND k = ?${
      source ? " AND source = ?" : ""
    }`;
    const args: unknown[] = [binaryQuantize(query), candidates];
    if (source) args.push(source);
    const ids = this.db
      .prepare<unknown[], { id: number }>(sql)
      .all(...args)
      .map((r) => r.id);
    if (ids.length === 0) return [];
    const rows = this.db
      .prepare<[string], { id: number; vector: Buffer }>(
        "SELECT chunk_id AS id, vector FROM memory_vectors WHERE chunk_id IN (SELECT value FROM json_each(?))",
      )
      .all(JSON.stringify(ids));
    return rows
      .map((r) => ({
        id: r.id,
        distance: cosineDistance(query, toF32(r.vector)),
      }))
      .sort((a, b) => a.distance - b.distance)
      .slice(0, k);
  }
}
