/**
 * The owner's last channel target (heartbeat/cron `last`), kept in the core `kv` table so a restart
 * does not forget where the owner talks: without it every proactive message after a restart would be
 * dropped until the owner happened to write again.
 */
import type { Db } from "../store/db.js";
import { KvNamespace } from "../store/kv.js";
import type { LastTargetStore } from "./registry.js";

/** A {@link LastTargetStore} over the core `kv` table (key `channels:last_target`). */
export function kvLastTargetStore(db: Db, now: () => number = Date.now): LastTargetStore {
  const kv = new KvNamespace(db, "channels:", now);
  return {
    load: () => kv.get("last_target"),
    save: (target) => kv.set("last_target", target),
  };
}
