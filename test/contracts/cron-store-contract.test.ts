/** Runs the cron store contract against the SQLite cron store on a real file in a temp dir. */
import { CronStore } from "../../internal/cron/cron-store.js";
import { openSqliteFile } from "./sqlite-file.js";
import { runCronStoreContract } from "./cron-store-contract.js";

runCronStoreContract("sqlite", () => {
  const file = openSqliteFile();
  const h = {
    store: new CronStore(file.db),
    restart: () => (h.store = new CronStore(file.restart())),
    other: () => new CronStore(file.second()),
    putRawJob: (id: string, spec: string) =>
      file.db
        .prepare("INSERT INTO cron_jobs (id, spec, created_at, updated_at) VALUES (?, ?, 0, 0)")
        .run(id, spec),
    cleanup: () => file.close(),
  };
  return h;
});
