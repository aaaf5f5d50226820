/**
 * Runs the vector store contract on a real SQLite file in a temp dir: with sqlite-vec loaded (as on
 * every supported platform), and without it (the keyword-only fallback when the extension cannot load).
 */
import { loadSqliteVec, VectorStore } from "../../internal/memory/vector-store.js";
import type { Db } from "../../internal/store/db.js";
import { openSqliteFile } from "./sqlite-file.js";
import { runVectorStoreContract } from "./vector-store-contract.js";

runVectorStoreContract("sqlite-vec", { vectors: true }, () => {
  const file = openSqliteFile();
  const open = (db: Db): VectorStore => {
    const err = loadSqliteVec(db);
    if (err) throw new Error(`sqlite-vec must load for this run: ${err}`);
    return new VectorStore(db, undefined);
  };
  const h = {
    store: open(file.db),
    restart: () => (h.store = open(file.restart())),
    cleanup: () => file.close(),
  };
  return h;
});

runVectorStoreContract("without sqlite-vec", { vectors: false }, () => {
  const file = openSqliteFile();
  const reason = "sqlite-vec is not installed for this platform";
  const h = {
    store: new VectorStore(file.db, reason),
    restart: () => (h.store = new VectorStore(file.restart(), reason)),
    cleanup: () => file.close(),
  };
  return h;
});
