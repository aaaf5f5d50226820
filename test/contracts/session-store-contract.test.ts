/** Runs the session store contract against the SQLite session store on a real file in a temp dir. */
import { SessionStore } from "../../internal/session/session-store.js";
import { openSqliteFile } from "./sqlite-file.js";
import { runSessionStoreContract } from "./session-store-contract.js";

runSessionStoreContract("sqlite", () => {
  const file = openSqliteFile();
  const h = {
    store: new SessionStore(file.db),
    restart: () => (h.store = new SessionStore(file.restart())),
    other: () => new SessionStore(file.second()),
    cleanup: () => file.close(),
  };
  return h;
});
