/**
 * The `familiar doctor` check of the memory index: sqlite-vec loads into better-sqlite3, and, when
 * `memory.embeddings` is set, the embedding model answers one tiny request; reports its dimension.
 */
import Database from "better-sqlite3";
import type { Config } from "../config/schema.js";
import { systemClock } from "../core/clock.js";
import { silentLogger } from "../log/logger.js";
import { Embedder } from "./embedder.js";
import { loadSqliteVec } from "./vector-store.js";

/** Same shape as doctor's CheckResult. */
export interface MemoryCheck {
  status: "ok" | "warn" | "fail";
  name: string;
  detail: string;
}

function sqliteVecVersion(): { version?: string; error?: string } {
  const db = new Database(":memory:");
  try {
    const error = loadSqliteVec(db);
    if (error) return { error };
    return { version: db.prepare<[], { v: string }>("SELECT vec_version() AS v").get()?.v ?? "?" };
  } finally {
    db.close();
  }
}

/** Runs the check; `timeoutMs` bounds the embedding request (no retries). */
export async function checkMemory(cfg: Config, timeoutMs: number): Promise<MemoryCheck> {
  const name = "memory";
  const vec = sqliteVecVersion();
  const e = cfg.memory.embeddings;
  if (!e)
    return {
      status: "ok",
      name,
      detail: `keyword search only (set memory.embeddings to search by meaning)${vec.error ? "" : `; sqlite-vec ${vec.version} loads`}`,
    };
  if (vec.error)
    return {
      status: "fail",
      name,
      detail: `sqlite-vec does not load here, so no vector search: ${vec.error}`,
    };
  const quick: Config = {
    ...cfg,
    models: {
      ...cfg.models,
      max_retries: 0,
      timeout_s: timeoutMs / 1000,
      providers: Object.fromEntries(
        Object.entries(cfg.models.providers).map(([k, p]) => [k, { ...p, timeout_s: timeoutMs / 1000 }]),
      ),
    },
  };
  const embedder = new Embedder({ config: () => quick, logger: silentLogger(), clock: systemClock });
  const ref = `${e.provider}/${e.model}`;
  try {
    const [v] = await embedder.embed(["familiar doctor"], undefined, "check");
    const dims = v?.length ?? 0;
    if (e.dimensions !== undefined && dims !== e.dimensions)
      return {
        status: "warn",
        name,
        detail: `${ref} answers with ${dims} dimensions, but memory.embeddings.dimensions is ${e.dimensions} (the model ignores it)`,
      };
    return { status: "ok", name, detail: `${ref} answers, ${dims} dimensions; sqlite-vec ${vec.version}` };
  } catch (err) {
    return {
      status: "fail",
      name,
      detail: `${(err as Error).message} (memory_search falls back to keywords until it answers)`,
    };
  }
}
