/**
 * Runs the seen-ids contract against Telegram's update store and Discord's seen store, each on a real
 * SQLite file in a temp dir.
 */
import { SeenStore } from "../../internal/channels/discord/seen-store.js";
import { UpdateStore } from "../../internal/channels/telegram/update-store.js";
import { openSqliteFile } from "./sqlite-file.js";
import { runSeenIdsContract } from "./seen-ids-contract.js";

runSeenIdsContract("telegram update store", { handledTracking: true }, () => {
  const file = openSqliteFile();
  let store = new UpdateStore(file.db, "bot1", Date.now);
  return {
    admit: (ids) => store.receive(ids.map((id) => ({ update_id: id, message: { text: `u${id}` } }))),
    restart: () => {
      store = new UpdateStore(file.restart(), "bot1", Date.now);
    },
    unhandled: () => store.pending().map((u) => u.updateId),
    markHandled: (id) => store.markHandled(id),
    cleanup: () => file.close(),
  };
});

runSeenIdsContract("discord seen store", { handledTracking: false }, () => {
  const file = openSqliteFile();
  let store = new SeenStore(file.db, Date.now);
  return {
    admit: (ids) => ids.filter((id) => store.claim(String(id))),
    restart: () => {
      store = new SeenStore(file.restart(), Date.now);
    },
    cleanup: () => file.close(),
  };
});
