/**
 * The ONE contract suite for the vector store (internal/memory/vector-store.ts) that memory search
 * ranks with: nearest chunks by cosine distance, closest first, optionally of one source; vectors,
 * and the dimension fixed by the first ones, survive a restart; a model change drops them all. When
 * sqlite-vec cannot load, the store says why and every call is a harmless no-op (keyword search only),
 * never an error on the message path.
 *
 * Usage (inside a vitest file): `runVectorStoreContract("sqlite-vec", { vectors: true }, factory)`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { VectorStore } from "../../internal/memory/vector-store.js";

/** Whether this store can hold vectors at all. */
export interface VectorStoreCapabilities {
  vectors: boolean;
}

/** What the suite needs to drive one vector store on a real SQLite file. */
export interface VectorStoreHarness {
  store: VectorStore;
  /** Closes the database and builds the store again on the same file (a daemon restart). */
  restart(): VectorStore;
  cleanup(): void;
}

const v = (...xs: number[]): Float32Array => Float32Array.from(xs);
const ROWS = [
  { id: 1, source: "file", vector: v(1, 0, 0, 0, 0, 0, 0, 0.1) },
  { id: 2, source: "file", vector: v(0.9, 0.2, 0, 0, 0, 0, 0, 0.1) },
  { id: 3, source: "session", vector: v(-1, 0, 1, 0, 0, 0, 0, 0.1) },
  { id: 4, source: "session", vector: v(0.95, 0.1, 0, 0, 0, 0, 0, 0.1) },
];
const QUERY = v(1, 0.05, 0, 0, 0, 0, 0, 0.1);

/** Registers the contract tests for one implementation. */
export function runVectorStoreContract(
  name: string,
  caps: VectorStoreCapabilities,
  factory: () => VectorStoreHarness,
): void {
  describe(`vector store contract: ${name}`, () => {
    let h: VectorStoreHarness | undefined;
    const make = (): VectorStoreHarness => (h = factory());
    afterEach(() => {
      h?.cleanup();
      h = undefined;
    });
    const ids = (s: VectorStore, k: number, source?: "file" | "session"): number[] =>
      s.nearest(QUERY, k, source).map((hit) => hit.id);

    it.skipIf(!caps.vectors)("returns the k nearest by cosine distance, closest first", () => {
      const { store } = make();
      expect(store.unavailable()).toBeUndefined();
      expect(store.dimension()).toBeUndefined();
      store.put(ROWS);
      expect(store.dimension()).toBe(8);
      const hits = store.nearest(QUERY, 3);
      expect(hits.map((x) => x.id)).toEqual([1, 4, 2]);
      expect(hits.map((x) => x.distance)).toEqual([...hits.map((x) => x.distance)].sort((a, b) => a - b));
      expect(hits[0]!.distance).toBeGreaterThanOrEqual(0);
      expect(ids(store, 10)).toEqual([1, 4, 2, 3]);
    });

    it.skipIf(!caps.vectors)("filters by source and forgets removed chunks", () => {
      const { store } = make();
      store.put(ROWS);
      expect(ids(store, 10, "session")).toEqual([4, 3]);
      store.remove([4, 1]);
      expect(ids(store, 10)).toEqual([2, 3]);
    });

    it.skipIf(!caps.vectors)("replaces the vector of a chunk stored again", () => {
      const { store } = make();
      store.put(ROWS);
      store.put([{ id: 1, source: "file", vector: v(-1, 0, 0, 0, 0, 0, 0, 0.1) }]);
      expect(ids(store, 10)[0]).toBe(4);
      expect(ids(store, 10)).toHaveLength(4);
    });

    it.skipIf(!caps.vectors)("keeps vectors and their dimension across a restart", () => {
      const x = make();
      x.store.put(ROWS);
      const after = x.restart();
      expect(after.dimension()).toBe(8);
      expect(ids(after, 2)).toEqual([1, 4]);
    });

    it.skipIf(!caps.vectors)(
      "refuses a vector of another dimension and answers such a query with nothing",
      () => {
        const { store } = make();
        store.put(ROWS);
        expect(() => store.put([{ id: 9, source: "file", vector: v(1, 2, 3) }])).toThrow(/dimensions/);
        expect(store.nearest(v(1, 2, 3), 5)).toEqual([]);
      },
    );

    it.skipIf(!caps.vectors)("drops everything on a model change and takes a new dimension after", () => {
      const x = make();
      x.store.put(ROWS);
      x.store.drop();
      expect(x.store.dimension()).toBeUndefined();
      expect(x.store.nearest(QUERY, 5)).toEqual([]);
      x.store.put([{ id: 7, source: "file", vector: v(1, 0, 0, 1) }]);
      expect(x.restart().dimension()).toBe(4);
    });

    it.skipIf(caps.vectors)("without vectors, says why and answers every call harmlessly", () => {
      const x = make();
      expect(x.store.unavailable()).toMatch(/\S/);
      x.store.put(ROWS);
      x.store.remove([1]);
      x.store.drop();
      expect(x.store.dimension()).toBeUndefined();
      expect(x.store.nearest(QUERY, 5)).toEqual([]);
      expect(x.restart().nearest(QUERY, 5)).toEqual([]);
    });
  });
}
