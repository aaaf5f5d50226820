/**
 * The owner's last channel target (heartbeat/cron `last`), kept in the core `kv` table so a restart
 * does not forget where the owner talks: without it every proactive message after a restart would be
 * dropped until the owner happened to write again.
 */
import type { Db } from "../store/db.js";
import type { LastTargetStore } from "./registry.js";

const KEY = "channels:last_target";

/** A {@link LastTargetStore} over the core `kv` table. */
export function kvLastTargetStore(db: Db, now: () => number = Date.now): LastTargetStore {
  const get = db.prepare<[string], { value: string }>("SELECT value FROM kv WHERE key = ?");
  const put = db.prepare(
    "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
  );
  return {
    load: () => get.get(KEY)?.value,
    save: (target) => void put.run(KEY, target, now()),
  };
}
